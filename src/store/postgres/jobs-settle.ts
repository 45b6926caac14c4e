import { AWAITS_RECEIPT, failureDetail, JOB_TEXTS, SENT_BY_PHONE, TAKE_REPORT, THROUGH_A_PHONE } from "../../db/jobs-statements.ts";
import { ms } from "../../db/ms.ts";
import type { MonthOf } from "../../db/usage-month.ts";
import type { JobStore } from "../contract-jobs.ts";
import { pgTimeline } from "./jobs-timeline.ts";
import { transaction, type Pool } from "./pool.ts";
import { pgUsageCount } from "./usage-count.ts";

// A receipt is stored only while it is awaited: a late status event, or a look that raced one, changes nothing settled.
const RECORD_RECEIPT = `
  UPDATE jobs SET outcome = $3, receipt = $4, receipt_deadline = NULL, receipt_at = $2,
    error_code = coalesce(nullif($5, ''), error_code), error_message = coalesce(nullif($6, ''), error_message),
    attempts = 0, next_attempt_at = $2, updated_at = $2
  WHERE id = $1 AND ${AWAITS_RECEIPT}`;

type Settle = Pick<
  JobStore,
  "receiptLater" | "sentByPhone" | "wasSentByPhone" | "receiptsDue" | "recordReceipt" | "takeReport" | "reported" | "giveUp" | "retryLater"
>;

/** The job store's steps after the send on PostgreSQL (src/db/jobs-settle.ts on SQLite): the carrier's receipt, then the report. */
export function pgSettle(pool: Pool, monthOf: MonthOf): Settle {
  return {
    // Only a job still waiting for its receipt: a webhook may have settled it while the look was out.
    async receiptLater(id, at, now) {
      await pool.query(`UPDATE jobs SET next_attempt_at = $2, updated_at = $3 WHERE id = $1 AND ${AWAITS_RECEIPT}`, [id, ms(at), ms(now)]);
    },
    async sentByPhone(id, now, how) {
      await pool.query(`
        INSERT INTO job_events (job_id, at, kind, detail) SELECT id, $2::bigint, 'sent', $3::text FROM jobs
        WHERE id = $1 AND ${THROUGH_A_PHONE} AND ${AWAITS_RECEIPT} AND NOT ${SENT_BY_PHONE}`, [id, ms(now), JOB_TEXTS.sentByPhone(how)]);
    },
    async wasSentByPhone(id) {
      return ((await pool.query(`SELECT 1 FROM jobs WHERE id = $1 AND ${SENT_BY_PHONE}`, [id])).rowCount ?? 0) > 0;
    },
    // Only jobs still waiting for their receipt: one already settled keeps its own schedule. One
    // statement; its rows are locked in the order of their ids, whoever else moves some of them.
    async receiptsDue(ids, now) {
      await pool.query(`
        UPDATE jobs SET next_attempt_at = $2
        WHERE id = ANY($1::bigint[]) AND state = 'reporting' AND receipt_deadline IS NOT NULL AND next_attempt_at > $2`, [ids, ms(now)]);
    },
    recordReceipt: (id, receipt, now) =>
      transaction(pool, async (client) => {
        const { outcome, errorCode = "", errorMessage = "" } = receipt;
        const moved = await client.query(RECORD_RECEIPT, [id, ms(now), outcome, receipt.receipt, errorCode, errorMessage]);
        if (!moved.rowCount) return false;
        if (outcome === "failed") await pgTimeline.add(client, id, ms(now), "failed", failureDetail(errorCode, errorMessage));
        return true;
      }),
    async takeReport(id, now, until) {
      return ((await pool.query(TAKE_REPORT("$1", "$2", "$3"), [ms(until), id, ms(now)])).rowCount ?? 0) > 0;
    },
    // The job's final state change and its count in usage: one commit, so they never disagree.
    reported: (id, status, now) =>
      transaction(pool, async (client) => {
        await client.query("UPDATE jobs SET state = 'done', reported_status = $2, reported_at = $3, updated_at = $3 WHERE id = $1", [id, status, ms(now)]);
        await pgUsageCount.settled(client, id, monthOf(ms(now)));
      }),
    giveUp: (id, now, reason) =>
      transaction(pool, async (client) => {
        await client.query("UPDATE jobs SET state = 'dead', updated_at = $2 WHERE id = $1", [id, ms(now)]);
        await pgTimeline.add(client, id, ms(now), "report_failed", JOB_TEXTS.notReported(reason));
        await pgUsageCount.settled(client, id, monthOf(ms(now)));
      }),
    retryLater: (id, at, reason, now) =>
      transaction(pool, async (client) => {
        await client.query(`
          UPDATE jobs SET next_attempt_at = $2, attempts = attempts + 1, error_message = coalesce(error_message, $3), updated_at = $4
          WHERE id = $1`, [id, ms(at), reason, ms(now)]);
        await pgTimeline.addOnce(client, id, ms(now), "report_retry", reason);
      }),
  };
}
