import { JOB_COLUMNS, jobFromRow, type JobRow } from "../../db/job-rows.ts";
import { AWAITING_RECEIPTS, AWAITS_RECEIPT } from "../../db/jobs-statements.ts";
import { ms } from "../../db/ms.ts";
import type { Sealer } from "../../db/sealer.ts";
import type { MonthOf } from "../../db/usage-month.ts";
import type { AwaitedReceipt, JobStore, PhoneJobs } from "../contract-jobs.ts";
import type { JobState, PhoneJob } from "../types.ts";
import { pgQueue } from "./jobs-queue.ts";
import { pgSend } from "./jobs-send.ts";
import { pgSettle } from "./jobs-settle.ts";
import { pgTimeline } from "./jobs-timeline.ts";
import type { Pool } from "./pool.ts";

/**
 * The durable work queue on PostgreSQL, with SQLite's semantics method by method
 * (src/db/jobs.ts): a job moves queued -> sending -> reporting -> done, each move one
 * transaction, committed before the work it announces, with its timeline events and its
 * count in usage. Of servers sharing the database, only one claims a job: the claim is a
 * conditional UPDATE of a queued job, and names its server (`serverId`, run_by) until the
 * send's outcome is stored, fencing off a server presumed dead. Its steps: the queue (jobs-queue.ts), a send
 * (jobs-send.ts), its receipt and report (jobs-settle.ts).
 */
export function pgJobs(pool: Pool, sealer: Sealer, monthOf: MonthOf, serverId: string | null = null): JobStore {
  const job = async (where: string, key: number | string) =>
    (await pool.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE ${where} = $1`, [key])).rows.map(jobFromRow)[0];
  return {
    ...pgQueue(pool),
    ...pgSend(pool, sealer, monthOf, serverId),
    ...pgSettle(pool, monthOf),
    // One statement: on the timeline once, until the reason changes.
    noteError: (id, reason, now) => pgTimeline.addOnce(pool, id, ms(now), "error", reason),
    async awaitingReceipts(apiKeyTag, limit) {
      return (await pool.query<AwaitedReceipt>(AWAITING_RECEIPTS("$1", "$2"), [apiKeyTag, limit])).rows;
    },
    byId: (id) => job("id", id),
    get: (messageId) => job("message_id", messageId),
    async counts() {
      const found = await pool.query<{ state: JobState; n: number }>("SELECT state, count(*) AS n FROM jobs GROUP BY state");
      return Object.fromEntries(found.rows.map((r) => [r.state, r.n]));
    },
    async oldestQueuedAt() {
      return (await pool.query<{ at: number | null }>("SELECT min(created_at) AS at FROM jobs WHERE state = 'queued'")).rows[0]?.at ?? undefined;
    },
  };
}

/** The jobs sent through phones, by the id they went under, on PostgreSQL (src/db/phone-jobs.ts on SQLite). */
export function pgPhoneJobs(pool: Pool): PhoneJobs {
  return {
    async sentAs(id) {
      const found = await pool.query<PhoneJob>(`
        SELECT id, message_id AS "messageId", location_id AS "locationId", first_sent_at AS "firstSentAt", api_key_tag AS "apiKeyTag",
          parts, ${AWAITS_RECEIPT} AS waiting
        FROM jobs WHERE idempotency_key = $1 LIMIT 1`, [id]);
      return found.rows[0];
    },
    async sentSince(apiKeyTag, since) {
      const found = await pool.query<{ at: number }>(`
        SELECT first_sent_at AS at FROM jobs
        WHERE api_key_tag = $1 AND first_sent_at >= $2 AND gateway <> 'cast'
        ORDER BY first_sent_at`, [apiKeyTag, since]);
      return found.rows.map((row) => row.at);
    },
  };
}
