import type { FailureCode } from "./failures.ts";
import type { Db } from "./index.ts";
import { jobFromRow, type Job, type JobState, type OutboundMessage, type Outcome } from "./job-rows.ts";
import { failureDetail, prepareJobStatements } from "./jobs-statements.ts";
import { ms } from "./ms.ts";
import { createTimeline } from "./timeline.ts";

export type { Job, JobState, OutboundMessage, Outcome } from "./job-rows.ts";

/** A due job as the queue sees it before it runs one: no payload read yet. */
export interface DueJob {
  id: number;
  state: JobState;
  locationId: string;
  /** 1 for each location's first due job, 2 for its second, … */
  turn: number;
}

/** What the carrier's receipt (or its absence) settles. */
export interface Receipt {
  outcome: Outcome;
  receipt: string;
  errorCode?: FailureCode;
  errorMessage?: string;
}

/** What a send attempt is committed with before it leaves. */
export interface Claim {
  idempotencyKey: string;
  apiKeyTag: string;
  /** The sender ID it goes with ("" : the gateway's default), for the message log. */
  senderId?: string;
}

export interface Result {
  outcome: Outcome;
  errorCode?: FailureCode;
  errorMessage?: string;
  gatewayMessageId?: string;
  /** SMS parts, as the gateway counted them. */
  parts?: number;
}

/** Why a send goes back to the queue: each is recorded in the message log differently. */
export interface SendLater {
  /** A refusal that proves nothing was ever sent under the job's key: the next attempt takes a fresh one. */
  freshKey?: boolean;
  /** The gateway refused the API key itself: the message is held, not failed. */
  held?: boolean;
  /** No clear answer: the SMS may have left (an operator may then never retry it). */
  unclear?: boolean;
}

export type JobStore = ReturnType<typeof createJobStore>;

/**
 * The durable work queue. A job moves queued -> sending -> reporting -> done, and
 * each move is committed before the work it announces, so after a crash we know
 * which SMS may already have left (state "sending"). Each write is one statement, run
 * through the group commit (commit.ts); only the recovery at start-up commits on its own.
 * Every time it writes goes through ms(): whole milliseconds, whatever the caller computed.
 */
export function createJobStore(db: Db) {
  const sql = prepareJobStatements(db);
  const timeline = createTimeline(db);
  // The writes of more than one statement, each all or nothing (a savepoint inside the group commit).
  const tx = {
    // An id remembered without its job would turn HighLevel's retry into a lost message.
    enqueue: db.transaction((message: OutboundMessage, now: number): boolean => {
      if (sql.remember.run(message.messageId).changes === 0) return false;
      return sql.enqueue.run(message.messageId, message.locationId, JSON.stringify(message), now, now, now).changes > 0;
    }),
    // A wait is logged when its reason changes, not at every try of a long outage.
    sendLater: db.transaction((id: number, at: number, reason: string, now: number, how: SendLater) => {
      const before = sql.lastReason.get(id);
      const flags = { fresh: how.freshKey ? 1 : 0, held: how.held ? 1 : 0, unclear: how.unclear ? 1 : 0 };
      if (sql.sendLater.run({ id, at, reason, now, ...flags }).changes === 0) return;
      if (before !== reason) timeline.add(id, now, how.held ? "held" : "retry", reason);
    }),
    markHeld: db.transaction((id: number, reason: string, at: number, now: number) => {
      const wasHeld = sql.heldNow.get(id) !== 0;
      sql.markHeld.run({ id, reason, at, now });
      if (!wasHeld) timeline.add(id, now, "held", reason);
    }),
    recordResult: db.transaction((row: Parameters<typeof sql.recordResult.run>[0]) => {
      sql.recordResult.run(row);
      if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", failureDetail(row.errorCode, row.errorMessage));
    }),
    receiptsDue: db.transaction((ids: number[], now: number) => {
      for (const id of ids) sql.receiptDue.run({ id, now });
    }),
    recordReceipt: db.transaction((row: Parameters<typeof sql.recordReceipt.run>[0]) => {
      sql.recordReceipt.run(row);
      if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", failureDetail(row.errorCode, row.errorMessage));
    }),
    giveUp: db.transaction((id: number, now: number, reason: string) => {
      sql.giveUp.run(now, id);
      timeline.add(id, now, "report_failed", `status not reported: ${reason}`);
    }),
    retryLater: db.transaction((id: number, at: number, reason: string, now: number) => {
      sql.retryLater.run(at, reason, now, id);
      if (timeline.last(id, "report_retry") !== reason) timeline.add(id, now, "report_retry", reason);
    }),
    noteError: db.transaction((id: number, reason: string, now: number) => {
      if (timeline.last(id, "error") !== reason) timeline.add(id, now, "error", reason);
    }),
    recoverInterrupted: db.transaction((now: number, since: number) => {
      sql.logResumed.run({ now, since });
      const resumed = sql.resumeInterrupted.run({ now, since }).changes;
      const failed = sql.stillSending.all();
      sql.logInterrupted.run({ now });
      sql.failInterrupted.run({ now });
      return { resumed, failed };
    }),
  };

  return {
    /**
     * Adds a new job; false when this messageId was seen before, however long ago (its
     * job may be pruned; its id is remembered). Run inside the group commit's transaction.
     */
    enqueue(message: OutboundMessage, now: number): boolean {
      return tx.enqueue(message, ms(now));
    },
    /**
     * Due jobs in turns between locations: each location's first, then each one's second,
     * and so on, so a location's backlog (a bulk campaign) never stands between another
     * and its turn. `waiting`: locations whose sends wait for a budget; only their reports
     * are read now.
     */
    due(now: number, limit: number, waiting?: (locationId: string) => boolean): DueJob[] {
      const locations = sql.waitingLocations.all();
      const each = Math.ceil(limit / Math.max(1, locations.length)) + 1;
      const isDue = (at: number | null) => at !== null && at <= now;
      const rows = locations.flatMap(({ location_id: locationId, sends_at, reports_at }) => {
        const reports = isDue(reports_at) ? sql.due.all(locationId, "reporting", now, each) : [];
        const sends = isDue(sends_at) && !waiting?.(locationId) ? sql.due.all(locationId, "queued", now, each) : [];
        return [...reports, ...sends]
          .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
          .slice(0, each)
          .map(({ id, state, next_attempt_at }, i) => ({ id, state, locationId, turn: i + 1, at: next_attempt_at }));
      });
      rows.sort((a, b) => a.turn - b.turn || a.at - b.at || a.id - b.id);
      return rows.slice(0, limit).map(({ id, state, locationId, turn }) => ({ id, state, locationId, turn }));
    },
    /** The whole job, to run it. */
    byId(id: number): Job | undefined {
      const row = sql.byId.get(id);
      return row && jobFromRow(row);
    },
    /**
     * Marks the job as being sent, with the attempt's idempotency key (kept from the first
     * attempt on). Committed before the gateway call; false if another worker took it.
     * No claim: nothing goes to the gateway (the job is failed without a send).
     */
    claimForSending(id: number, now: number, claim?: Claim): boolean {
      const row = { id, now: ms(now), key: claim?.idempotencyKey ?? null, tag: claim?.apiKeyTag ?? null, sender: claim?.senderId ?? null };
      return sql.claimForSending.run(row).changes > 0;
    },
    /**
     * Queued again for `at`: with the same idempotency key after an unclear answer; with
     * `freshKey` after a refusal that proves nothing was ever sent under the old key (Cast
     * keeps a refused send's answer under its key too, so the old key could only be refused again).
     */
    sendLater(id: number, at: number, reason: string, now: number, how: SendLater = {}): void {
      tx.sendLater(id, ms(at), reason, ms(now), how);
    },
    /** The send's result; with `receipt`, the report waits for the carrier's receipt (first look at `receipt.at`). */
    recordResult(id: number, result: Result, now: number, receipt?: { at: number; deadline: number }): void {
      tx.recordResult({
        id,
        now: ms(now),
        at: ms(receipt?.at ?? now),
        deadline: receipt ? ms(receipt.deadline) : null,
        outcome: result.outcome,
        errorCode: result.errorCode ?? "",
        errorMessage: result.errorMessage ?? "",
        gatewayMessageId: result.gatewayMessageId ?? "",
        parts: result.parts ?? null,
      });
    },
    /**
     * Waits on a key the gateway refused until `at`: shown as held, with `reason`. Out of
     * the queue's way meanwhile, so it takes no turn from reports or from other keys' sends.
     */
    markHeld(id: number, reason: string, at: number, now: number): void {
      tx.markHeld(id, reason, ms(at), ms(now));
    },
    /** A held key works again: its messages (every held one, in fact) are due now. */
    wakeHeld(now: number): number {
      return sql.wakeHeld.run({ now: ms(now) }).changes;
    },
    /** No final receipt yet: look again at `at`. */
    receiptLater(id: number, at: number, now: number): void {
      sql.receiptLater.run(ms(at), ms(now), id);
    },
    /** A read of the log found these jobs' receipts: they look again now. */
    receiptsDue(ids: number[], now: number): void {
      tx.receiptsDue(ids, ms(now));
    },
    /** The receipt settled the outcome (or none came in time): the report goes next. */
    recordReceipt(id: number, receipt: Receipt, now: number): void {
      tx.recordReceipt({ id, now: ms(now), errorCode: "", errorMessage: "", ...receipt });
    },
    /** HighLevel took the status: the job is done. */
    reported(id: number, status: string, now: number): void {
      sql.reported.run({ id, status, now: ms(now) });
    },
    /** The status report is given up (`reason`): the job is dead. */
    giveUp(id: number, now: number, reason: string): void {
      tx.giveUp(id, ms(now), reason);
    },
    /** The status report failed for `reason`: try again at `at`. */
    retryLater(id: number, at: number, reason: string, now: number): void {
      tx.retryLater(id, ms(at), reason, ms(now));
    },
    /** A run of the job threw `reason`: on its timeline once, until the reason changes. */
    noteError(id: number, reason: string, now: number): void {
      tx.noteError(id, reason, ms(now));
    },
    /**
     * Jobs a crash caught mid-send: sent again with their key when it was first used
     * after `since` (Cast still remembers it); else reported failed, never resent.
     */
    recoverInterrupted(now: number, since: number): { resumed: number; failed: { messageId: string; locationId: string }[] } {
      return tx.recoverInterrupted(ms(now), ms(since));
    },
    get(messageId: string): Job | undefined {
      const row = sql.get.get(messageId);
      return row && jobFromRow(row);
    },
    counts(): Partial<Record<JobState, number>> {
      return Object.fromEntries(sql.counts.all().map((r) => [r.state, r.n]));
    },
    /** Deletes up to `limit` finished jobs (done, dead) last changed before `before`; how many it deleted. */
    prune(before: number, limit: number): number {
      return sql.prune.run(ms(before), limit).changes;
    },
    /** When the oldest job still waiting to be sent was accepted; undefined when none waits. */
    oldestQueuedAt(): number | undefined {
      return sql.oldestQueuedAt.get()?.at ?? undefined;
    },
  };
}
