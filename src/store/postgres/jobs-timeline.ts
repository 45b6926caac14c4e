import type { EventKind } from "../../db/timeline.ts";
import type { Queryable } from "./pool.ts";

/**
 * A job's timeline (job_events) on PostgreSQL, written on the caller's client inside its
 * transaction, beside the job's own change (src/db/timeline.ts on SQLite).
 */
export const pgTimeline = {
  async add(db: Queryable, jobId: number, at: number, kind: EventKind, detail: string): Promise<void> {
    await db.query("INSERT INTO job_events (job_id, at, kind, detail) VALUES ($1, $2, $3, $4)", [jobId, at, kind, detail]);
  },
  /** Adds the event unless the job's latest of its kind says the same: a reason is noted once, until it changes. */
  async addOnce(db: Queryable, jobId: number, at: number, kind: EventKind, detail: string): Promise<void> {
    await db.query(`
      INSERT INTO job_events (job_id, at, kind, detail) SELECT $1::bigint, $2::bigint, $3::text, $4::text
      WHERE (SELECT detail FROM job_events WHERE job_id = $1 AND kind = $3 ORDER BY id DESC LIMIT 1) IS DISTINCT FROM $4`, [jobId, at, kind, detail]);
  },
};
