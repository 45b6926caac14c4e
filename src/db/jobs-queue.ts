import { dueReads, inTurns } from "./due-turns.ts";
import type { Db } from "./index.ts";
import type { OutboundMessage } from "./job-rows.ts";
import type { DueJob } from "./job-types.ts";
import type { JobStatements } from "./jobs-statements.ts";
import { ms } from "./ms.ts";

/** The job store's queue as a whole (jobs.ts): a job in, the due ones out, the crashed ones back, the finished ones gone. */
export function createQueueSteps(db: Db, sql: JobStatements) {
  // An id remembered without its job would turn HighLevel's retry into a lost message.
  const enqueue = db.transaction((message: OutboundMessage, now: number): boolean => {
    if (sql.remember.run(message.messageId).changes === 0) return false;
    return sql.enqueue.run(message.messageId, message.locationId, JSON.stringify(message), now, now, now).changes > 0;
  });
  const recoverInterrupted = db.transaction((now: number, since: [string, number][], servers: string | null) => {
    let resumed = 0;
    for (const [kind, cutoff] of since) {
      sql.logResumed.run({ now, since: cutoff, kind, servers });
      resumed += sql.resumeInterrupted.run({ now, since: cutoff, kind, servers }).changes;
    }
    const failed = sql.stillSending.all({ servers });
    sql.logInterrupted.run({ now, servers });
    sql.failInterrupted.run({ now, servers });
    return { resumed, failed };
  });
  return {
    /**
     * Adds a new job; false when this messageId was seen before, however long ago (its
     * job may be pruned; its id is remembered). Run inside the group commit's transaction.
     */
    enqueue(message: OutboundMessage, now: number): boolean {
      return enqueue(message, ms(now));
    },
    /**
     * Due jobs in turns between locations: each location's first, then each one's second,
     * and so on, so a location's backlog (a bulk campaign) never stands between another
     * and its turn. `waiting`: locations whose sends wait for a budget; only their reports
     * are read now.
     */
    due(now: number, limit: number, waiting?: (locationId: string) => boolean): DueJob[] {
      return dueInTurns(sql, now, limit, waiting);
    },
    /**
     * Jobs a crash caught mid-send: sent again with their key when it was first used at
     * or after the cutoff of their gateway's kind (`since`, by kind: the gateway still
     * remembers it); else reported failed, never resent.
     */
    recoverInterrupted(
      now: number,
      since: Readonly<Record<string, number>>,
      servers?: readonly string[],
    ): { resumed: number; failed: { messageId: string; locationId: string }[] } {
      const of = servers ? JSON.stringify(servers) : null;
      return recoverInterrupted(ms(now), Object.entries(since).map(([kind, cutoff]) => [kind, ms(cutoff)]), of);
    },
    /** Deletes up to `limit` finished jobs (done, dead) last changed before `before`; how many it deleted. */
    prune(before: number, limit: number): number {
      return sql.prune.run(ms(before), limit).changes;
    },
  };
}

function dueInTurns(sql: JobStatements, now: number, limit: number, waiting?: (locationId: string) => boolean): DueJob[] {
  const { each, reports, sends } = dueReads(sql.waitingLocations.all(), now, limit, waiting);
  const read = (state: "queued" | "reporting", locationId: string) =>
    (state === "queued" ? sql.dueSends : sql.dueReports).all(locationId, now, each).map((row) => ({ ...row, state, locationId }));
  return inTurns([...reports.flatMap((l) => read("reporting", l)), ...sends.flatMap((l) => read("queued", l))], each, limit);
}
