import { dueReads, inTurns, type DueRow, type WaitingLocation } from "../../db/due-turns.ts";
import { failureDetail, JOB_TEXTS } from "../../db/jobs-statements.ts";
import { ms } from "../../db/ms.ts";
import type { JobStore } from "../contract-jobs.ts";
import { limitWait } from "../sqlite-jobs.ts";
import type { OutboundMessage } from "../types.ts";
import { transaction, type Pool, type Queryable } from "./pool.ts";

// The id remembered and the job added in one statement: an id remembered without its job
// would turn HighLevel's retry into a lost message. Its creation time is $4 three times.
const ENQUEUE = `
  WITH seen AS (INSERT INTO seen_messages (message_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING message_id)
  INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at)
  SELECT message_id, $2::text, $3::text, $4::bigint, $4, $4 FROM seen ON CONFLICT (message_id) DO NOTHING`;

// The locations with jobs queued or reporting, one index seek each in each state's own
// partial index (a backlog of thousands in one location costs no more to look past than
// one job), with when each state's earliest is due.
const FIRST = (from: string) => `LEAST(
  (SELECT min(location_id) FROM jobs WHERE state = 'queued' AND location_id ${from}),
  (SELECT min(location_id) FROM jobs WHERE state = 'reporting' AND location_id ${from}))`;
const WAITING_LOCATIONS = `
  WITH RECURSIVE next(location_id) AS (
    SELECT ${FIRST(">= ''")}
    UNION ALL
    SELECT ${FIRST("> next.location_id")} FROM next WHERE next.location_id IS NOT NULL
  ) SELECT location_id,
    (SELECT min(next_attempt_at) FROM jobs WHERE location_id = next.location_id AND state = 'queued') AS sends_at,
    (SELECT min(next_attempt_at) FROM jobs WHERE location_id = next.location_id AND state = 'reporting') AS reports_at
  FROM next WHERE location_id IS NOT NULL`;

/** Each listed location's first due jobs in one state ($1 locations, $2 now, $3 how many each), from that state's index. */
const DUE_IN = (state: "queued" | "reporting") => `
  SELECT d.id, d.next_attempt_at, '${state}' AS state, l.location_id AS "locationId" FROM unnest($1::text[]) AS l(location_id)
  CROSS JOIN LATERAL (SELECT id, next_attempt_at FROM jobs WHERE location_id = l.location_id AND state = '${state}'
    AND next_attempt_at <= $2 ORDER BY next_attempt_at, id LIMIT $3) AS d`;

/** Caught mid-send, with a key its gateway's kind ($3: `gateway` before any `:`) remembers since $2. Timelines are written in the jobs' order, as on SQLite. */
/** Of the servers $n names (their jobs' run_by), or of any when $n is null. */
const RUN_BY = (n: number) => `($${n}::text[] IS NULL OR run_by = ANY($${n}::text[]))`;

const RESUMABLE = "state = 'sending' AND idempotency_key IS NOT NULL AND split_part(gateway, ':', 1) = $3 AND first_sent_at >= $2 AND " + RUN_BY(4);

/** The job store's queue as a whole on PostgreSQL (src/db/jobs-queue.ts on SQLite). */
export function pgQueue(pool: Pool): Pick<JobStore, "enqueue" | "enqueueLimited" | "due" | "recoverInterrupted" | "prune"> {
  return {
    enqueue: (message, now) => enqueue(pool, message, ms(now)),
    // Counted and added in one transaction, under a lock of the location's limited messages:
    // neither two servers nor two pages at once let one more through.
    enqueueLimited: (message, now, limit) =>
      transaction(pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`enqueueLimited:${message.locationId}:${limit.prefix}`]);
        const recent = await client.query<{ at: number }>(`
          SELECT created_at AS at FROM jobs WHERE location_id = $1 AND created_at >= $2 AND starts_with(message_id, $3)
          ORDER BY created_at`, [message.locationId, ms(now - limit.windowMs), limit.prefix]);
        const wait = limitWait(recent.rows.map((r) => r.at), limit, now);
        if (wait !== undefined) return wait;
        await enqueue(client, message, ms(now));
        return 0;
      }),
    due: (now, limit, waiting) =>
      transaction(pool, async (client) => {
        const locations = await client.query<WaitingLocation>(WAITING_LOCATIONS);
        const { each, reports, sends } = dueReads(locations.rows, now, limit, waiting);
        // Times are whole milliseconds: due at `now` is due at its whole part.
        const read = async (state: "queued" | "reporting", ids: string[]) =>
          ids.length === 0 ? [] : (await client.query<DueRow>(DUE_IN(state), [ids, Math.floor(now), each])).rows;
        return inTurns([...(await read("reporting", reports)), ...(await read("queued", sends))], each, limit);
      }),
    recoverInterrupted: (now, since, servers) => transaction(pool, (client) => recover(client, ms(now), since, servers ? [...servers] : null)),
    async prune(before, limit) {
      const done = await pool.query(`
        DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'dead') AND updated_at < $1 LIMIT $2)`, [ms(before), limit]);
      return done.rowCount ?? 0;
    },
  };
}

async function enqueue(db: Queryable, message: OutboundMessage, now: number): Promise<boolean> {
  const added = await db.query(ENQUEUE, [message.messageId, message.locationId, JSON.stringify(message), now]);
  return (added.rowCount ?? 0) > 0;
}

/**
 * Jobs a crash caught mid-send: with a key its gateway still remembers (the cutoff of its
 * gateway's kind), the same send again is safe (a replay if it went); without one, its fate
 * is unknown: failed, to be reported, never resent.
 */
async function recover(client: Queryable, now: number, since: Readonly<Record<string, number>>, servers: string[] | null) {
  let resumed = 0;
  for (const [kind, cutoff] of Object.entries(since)) {
    const params = [now, ms(cutoff), kind, servers];
    await client.query(`INSERT INTO job_events (job_id, at, kind, detail) SELECT id, $1::bigint, 'restart', $5 FROM jobs WHERE ${RESUMABLE} ORDER BY id`, [
      ...params, JOB_TEXTS.resumed,
    ]);
    const done = await client.query(`UPDATE jobs SET state = 'queued', next_attempt_at = $1, updated_at = $1, unclear = 1 WHERE ${RESUMABLE}`, params);
    resumed += done.rowCount ?? 0;
  }
  const sending = `state = 'sending' AND ${RUN_BY(1)}`;
  const failed = await client.query<{ messageId: string; locationId: string }>(
    `SELECT message_id AS "messageId", location_id AS "locationId" FROM jobs WHERE ${sending} ORDER BY id`, [servers],
  );
  const unknown = failureDetail("delivery_unknown", JOB_TEXTS.unknownAfterRestart);
  await client.query(`INSERT INTO job_events (job_id, at, kind, detail) SELECT id, $2::bigint, 'failed', $3::text FROM jobs WHERE ${sending} ORDER BY id`, [
    servers, now, unknown,
  ]);
  await client.query(`
    UPDATE jobs SET state = 'reporting', outcome = 'failed', error_code = 'delivery_unknown', unclear = 1,
      error_message = $3, attempts = 0, next_attempt_at = $2, updated_at = $2
    WHERE ${sending}`, [servers, now, JOB_TEXTS.unknownAfterRestart]);
  return { resumed, failed: failed.rows };
}
