import type { Db } from "./index.ts";
import { jobFromRow, type Job, type JobState } from "./job-rows.ts";
import { createQueueSteps } from "./jobs-queue.ts";
import { createSendSteps } from "./jobs-send.ts";
import { createSettleSteps } from "./jobs-settle.ts";
import { AWAITING_RECEIPTS, prepareJobStatements } from "./jobs-statements.ts";
import type { AwaitedReceipt } from "../store/contract-jobs.ts";
import { ms } from "./ms.ts";
import { createTimeline } from "./timeline.ts";
import { prepareUsageCount } from "./usage-count.ts";
import { DEFAULT_USAGE_ZONE, monthIn, type MonthOf } from "./usage-month.ts";

export type { Job, JobState, OutboundMessage, Outcome } from "./job-rows.ts";
export type { Claim, DueJob, Receipt, Result, SendLater } from "./job-types.ts";

export type JobStore = ReturnType<typeof createJobStore>;

/**
 * The durable work queue. A job moves queued -> sending -> reporting -> done, and
 * each move is committed before the work it announces, so after a crash we know
 * which SMS may already have left (state "sending"). Each write is one statement, run
 * through the group commit (commit.ts); only the recovery at start-up commits on its own.
 * Every time it writes goes through ms(): whole milliseconds, whatever the caller computed.
 * Its steps come in groups over the same statements: the queue (jobs-queue.ts), a send
 * (jobs-send.ts), its receipt and report (jobs-settle.ts). `monthOf`: the month a message
 * counts in, in usage (usage-month.ts).
 */
export function createJobStore(db: Db, monthOf: MonthOf = monthIn(DEFAULT_USAGE_ZONE)) {
  const sql = prepareJobStatements(db);
  const awaiting = db.prepare<[string, number], AwaitedReceipt>(AWAITING_RECEIPTS("?", "?"));
  const timeline = createTimeline(db);
  const noteError = db.transaction((id: number, reason: string, now: number) => {
    if (timeline.last(id, "error") !== reason) timeline.add(id, now, "error", reason);
  });
  return {
    ...createQueueSteps(db, sql),
    ...createSendSteps(db, sql, timeline, monthOf),
    ...createSettleSteps(db, sql, timeline, prepareUsageCount(db), monthOf),
    /** A run of the job threw `reason`: on its timeline once, until the reason changes. */
    noteError(id: number, reason: string, now: number): void {
      noteError(id, reason, ms(now));
    },
    /** Up to `limit` messages of the key waiting for their receipt, the oldest first. */
    awaitingReceipts: (apiKeyTag: string, limit: number): AwaitedReceipt[] => awaiting.all(apiKeyTag, limit),
    /** The whole job, to run it. */
    byId(id: number): Job | undefined {
      const row = sql.byId.get(id);
      return row && jobFromRow(row);
    },
    get(messageId: string): Job | undefined {
      const row = sql.get.get(messageId);
      return row && jobFromRow(row);
    },
    counts(): Partial<Record<JobState, number>> {
      return Object.fromEntries(sql.counts.all().map((r) => [r.state, r.n]));
    },
    /** When the oldest job still waiting to be sent was accepted; undefined when none waits. */
    oldestQueuedAt(): number | undefined {
      return sql.oldestQueuedAt.get()?.at ?? undefined;
    },
  };
}
