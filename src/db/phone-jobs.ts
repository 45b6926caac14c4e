import type { Db } from "./index.ts";
import { AWAITS_RECEIPT } from "./jobs-statements.ts";

/** A job sent through a phone, as the phone names it: by the id it went under (the job's idempotency key). */
export interface PhoneJob {
  id: number;
  messageId: string;
  locationId: string;
  /** When its first attempt was claimed: ANDROID_SEND_DEADLINE counts from it. */
  firstSentAt: number | null;
  /** Still waiting for its receipt: a status webhook may settle it. */
  waiting: boolean;
  /** The API key tag it was claimed with: the phone's handle's. */
  apiKeyTag: string | null;
  /** SMS parts it went in (null: not known): the phone sends an event per part. */
  parts: number | null;
}

export type PhoneJobs = ReturnType<typeof createPhoneJobs>;

/** The queries a phone's status webhooks and its send deadline need of the job table. */
export function createPhoneJobs(db: Db) {
  const byKey = db.prepare<[string], PhoneJob>(`
    SELECT id, message_id AS messageId, location_id AS locationId, first_sent_at AS firstSentAt, api_key_tag AS apiKeyTag,
      parts, ${AWAITS_RECEIPT} AS waiting
    FROM jobs WHERE idempotency_key = ?`);
  // The same condition as the index jobs_sent_through_phones, which SQLite uses only so.
  const sentSince = db.prepare<[string, number], { at: number }>(`
    SELECT first_sent_at AS at FROM jobs
    WHERE api_key_tag = ? AND first_sent_at >= ? AND gateway <> 'cast'
    ORDER BY first_sent_at`);
  return {
    /** The job sent under `id`; undefined when none was. */
    sentAs(id: string): PhoneJob | undefined {
      const job = byKey.get(id);
      return job && { ...job, waiting: Boolean(job.waiting) };
    },
    /** When each message claimed with the phone's key tag was first sent, at or after `since`, the oldest first. */
    sentSince(apiKeyTag: string, since: number): number[] {
      return sentSince.all(apiKeyTag, since).map((row) => row.at);
    },
  };
}
