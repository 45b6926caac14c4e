import type { Db } from "./index.ts";
import type { Receipt } from "./job-types.ts";
import { failureDetail, JOB_TEXTS, type JobStatements } from "./jobs-statements.ts";
import { ms } from "./ms.ts";
import type { Timeline } from "./timeline.ts";
import type { UsageCount } from "./usage-count.ts";
import type { MonthOf } from "./usage-month.ts";

/** The job store's steps after the send (jobs.ts): the carrier's receipt, then the report to HighLevel. */
export function createSettleSteps(db: Db, sql: JobStatements, timeline: Timeline, usage: UsageCount, monthOf: MonthOf) {
  const tx = settleTransactions(db, sql, timeline, usage, monthOf);
  return {
    /** No final receipt yet: look again at `at`. */
    receiptLater: (id: number, at: number, now: number): void => void sql.receiptLater.run(ms(at), ms(now), id),
    /**
     * The phone says it sent the message (`Sent`: the carrier took it, no delivery yet), as
     * `how` tells (an event, a read of its state): on its timeline once, so the log no longer
     * shows it as on the phone. Nothing for a message not sent through a phone or settled already.
     */
    sentByPhone(id: number, now: number, how: string): void {
      sql.sentByPhone.run({ id, now: ms(now), detail: JOB_TEXTS.sentByPhone(how) });
    },
    /** Whether the phone has said it sent the message (its timeline's "sent"): the carrier took it. */
    wasSentByPhone: (id: number): boolean => sql.wasSentByPhone.get(id) !== undefined,
    /** A read of the log found these jobs' receipts: they look again now. */
    receiptsDue(ids: number[], now: number): void {
      tx.receiptsDue(ids, ms(now));
    },
    /**
     * The receipt settled the outcome (or none came in time): the report goes next. False
     * when the job no longer awaits its receipt (settled already, by a webhook or a look): nothing changed.
     */
    recordReceipt(id: number, receipt: Receipt, now: number): boolean {
      return tx.recordReceipt({ id, now: ms(now), errorCode: "", errorMessage: "", ...receipt });
    },
    /** Takes the job's report until `until`: false when it is not due at `now` (another server took it). */
    takeReport: (id: number, now: number, until: number): boolean => sql.takeReport.run(ms(until), id, ms(now)).changes > 0,
    /** HighLevel took the status: the job is done. */
    reported(id: number, status: string, now: number): void {
      tx.reported(id, status, ms(now));
    },
    /** The status report is given up (`reason`): the job is dead. */
    giveUp(id: number, now: number, reason: string): void {
      tx.giveUp(id, ms(now), reason);
    },
    /** The status report failed for `reason`: try again at `at`. */
    retryLater(id: number, at: number, reason: string, now: number): void {
      tx.retryLater(id, ms(at), reason, ms(now));
    },
  };
}

/** The settle steps' writes of more than one statement, each one transaction. */
function settleTransactions(db: Db, sql: JobStatements, timeline: Timeline, usage: UsageCount, monthOf: MonthOf) {
  return {
    receiptsDue: db.transaction((ids: number[], now: number) => {
      for (const id of ids) sql.receiptDue.run({ id, now });
    }),
    recordReceipt: db.transaction((row: Parameters<typeof sql.recordReceipt.run>[0]): boolean => {
      if (sql.recordReceipt.run(row).changes === 0) return false;
      if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", failureDetail(row.errorCode, row.errorMessage));
      return true;
    }),
    // The job's final state change and its count in usage: one commit, so they never disagree.
    reported: db.transaction((id: number, status: string, now: number) => {
      sql.reported.run({ id, status, now });
      usage.settled(id, monthOf(now));
    }),
    giveUp: db.transaction((id: number, now: number, reason: string) => {
      sql.giveUp.run(now, id);
      timeline.add(id, now, "report_failed", JOB_TEXTS.notReported(reason));
      usage.settled(id, monthOf(now));
    }),
    retryLater: db.transaction((id: number, at: number, reason: string, now: number) => {
      sql.retryLater.run(at, reason, now, id);
      if (timeline.last(id, "report_retry") !== reason) timeline.add(id, now, "report_retry", reason);
    }),
  };
}
