import { resultRow } from "../../db/jobs-send.ts";
import { failureDetail, JOB_TEXTS } from "../../db/jobs-statements.ts";
import { ms } from "../../db/ms.ts";
import type { Sealer } from "../../db/sealer.ts";
import type { MonthOf } from "../../db/usage-month.ts";
import { capReached } from "../../db/usage-store.ts";
import type { JobStore } from "../contract-jobs.ts";
import type { Claim } from "../types.ts";
import { pgGatewayKeys } from "./gateway-keys.ts";
import { pgTimeline } from "./jobs-timeline.ts";
import { transaction, type Pool, type Queryable } from "./pool.ts";
import { USED } from "./usage.ts";

// Only a queued job is claimed: of servers racing for one job, exactly one changes it, and
// the job names it ($8, run_by) until the send's outcome is stored. The key, the first
// attempt's time, the API key's tag and the gateway are set once: every retry reuses them,
// unless $6 (fresh: none of the attempts reached the gateway: they start anew).
const CLAIM = `
  UPDATE jobs SET state = 'sending', attempts = attempts + 1, updated_at = $2, held = 0, run_by = $8,
    sender_id = coalesce($5, sender_id),
    gateway = CASE WHEN ($6 OR api_key_tag IS NULL) AND $4::text IS NOT NULL THEN $7 ELSE gateway END,
    idempotency_key = CASE WHEN $6 THEN $3 ELSE coalesce(idempotency_key, $3) END,
    api_key_tag = CASE WHEN $6 THEN $4 ELSE coalesce(api_key_tag, $4) END,
    first_sent_at = CASE WHEN $3::text IS NULL THEN first_sent_at WHEN $6 THEN $2 ELSE coalesce(first_sent_at, $2) END
  WHERE id = $1 AND state = 'queued'`;

/**
 * A send's outcome is stored only by the server that claimed it (`me`: run_by): once a
 * server presumed dead has had its sends rescued (queued again, run_by still naming it),
 * its late write changes nothing, whoever claims the job next, and whatever became of that
 * claim. A refusal stored straight from the queue (no claim, `unclaimed`) is stored while
 * the job is queued, unless it was rescued from this very server.
 */
const FENCED = (me: string) => `state = 'sending' AND run_by IS NOT DISTINCT FROM ${me}`;

const SEND_LATER = `
  UPDATE jobs SET state = 'queued', next_attempt_at = $2, error_message = $3, updated_at = $4,
    idempotency_key = CASE WHEN $5 THEN NULL ELSE idempotency_key END,
    api_key_tag = CASE WHEN $5 THEN NULL ELSE api_key_tag END,
    first_sent_at = CASE WHEN $5 THEN NULL ELSE first_sent_at END,
    held = $6, unclear = GREATEST(unclear, $7), run_by = NULL
  WHERE id = $1 AND ${FENCED("$8")}`;

// Sent, but the gateway proved it never went (a phone's send limit): queued again as new, under a fresh key.
const SEND_AGAIN = `
  UPDATE jobs SET state = 'queued', next_attempt_at = $2, error_message = $3, updated_at = $4, attempts = 0,
    outcome = NULL, error_code = NULL, gateway_message_id = NULL, receipt_deadline = NULL, sent_at = NULL, parts = NULL,
    idempotency_key = NULL, api_key_tag = NULL, first_sent_at = NULL, unclear = 0, held = 0
  WHERE id = $1 AND state = 'reporting' AND receipt_deadline IS NOT NULL`;

const RECORD_RESULT = `
  UPDATE jobs SET state = 'reporting', outcome = $3, error_code = nullif($4, ''), error_message = nullif($5, ''),
    gateway_message_id = nullif($6, ''), attempts = 0, next_attempt_at = $7, updated_at = $2, receipt_deadline = $8, held = 0,
    sent_at = CASE WHEN $6 <> '' THEN $2::bigint END, parts = coalesce($9, parts), usage_month = coalesce(usage_month, $10),
    unclear = GREATEST(unclear, ($4 IN ('gateway_unknown', 'delivery_unknown'))::int), run_by = NULL
  WHERE id = $1 AND CASE WHEN $12::boolean THEN state = 'queued' AND (run_by IS NULL OR run_by IS DISTINCT FROM $11) ELSE ${FENCED("$11")} END`;

type Send = Pick<JobStore, "claimForSending" | "sendLater" | "sendAgain" | "recordResult" | "markHeld" | "wakeHeld">;

/** The job store's steps of a send on PostgreSQL (src/db/jobs-send.ts on SQLite): claimed, sent later, held, its result. */
export function pgSend(pool: Pool, sealer: Sealer, monthOf: MonthOf, me: string | null = null): Send {
  return {
    // The key the send goes with is kept in the claim's transaction: a receipt's reader finds it.
    // Kept last: its row (one per API key) stays locked only for the commit, not the whole claim.
    claimForSending: (id, now, claim, key) =>
      transaction(pool, async (client) => {
        const claimed = await claimIn(client, id, ms(now), monthOf, me, claim);
        if (claim && key) await pgGatewayKeys(client, sealer).keep(claim.apiKeyTag, key.masked, key.apiKey);
        return claimed;
      }),
    // A wait is logged when its reason changes, not at every try of a long outage.
    sendLater: (id, at, reason, now, how = {}) =>
      transaction(pool, async (client) => {
        const before = (await client.query<{ reason: string | null }>("SELECT error_message AS reason FROM jobs WHERE id = $1", [id])).rows[0]?.reason;
        const flags = [Boolean(how.freshKey), how.held ? 1 : 0, how.unclear ? 1 : 0];
        const moved = await client.query(SEND_LATER, [id, ms(at), reason, ms(now), ...flags, me]);
        if (moved.rowCount && before !== reason) await pgTimeline.add(client, id, ms(now), how.held ? "held" : "retry", reason);
      }),
    sendAgain: (id, at, reason, now) =>
      transaction(pool, async (client) => {
        const moved = await client.query(SEND_AGAIN, [id, ms(at), reason, ms(now)]);
        if (moved.rowCount) await pgTimeline.add(client, id, ms(now), "retry", reason);
      }),
    recordResult: (id, result, now, receipt, unclaimed = false) =>
      transaction(pool, (client) => recordResult(client, resultRow(id, result, now, monthOf, receipt), me, unclaimed)),
    markHeld: (id, reason, at, now) =>
      transaction(pool, async (client) => {
        const held = (await client.query<{ held: number }>("SELECT held FROM jobs WHERE id = $1 AND state = 'queued' FOR UPDATE", [id])).rows[0]?.held;
        await client.query("UPDATE jobs SET held = 1, error_message = $2, next_attempt_at = $3, updated_at = $4 WHERE id = $1 AND state = 'queued'", [
          id, reason, ms(at), ms(now),
        ]);
        if (held === 0) await pgTimeline.add(client, id, ms(now), "held", reason);
      }),
    async wakeHeld(now) {
      const woken = await pool.query("UPDATE jobs SET next_attempt_at = $1 WHERE state = 'queued' AND held = 1 AND next_attempt_at > $1", [ms(now)]);
      return woken.rowCount ?? 0;
    },
  };
}

async function recordResult(db: Queryable, row: ReturnType<typeof resultRow>, me: string | null, unclaimed: boolean): Promise<void> {
  const moved = await db.query(RECORD_RESULT, [
    row.id, row.now, row.outcome, row.errorCode, row.errorMessage, row.gatewayMessageId, row.at, row.deadline, row.parts, row.month, me, unclaimed,
  ]);
  if (moved.rowCount && row.outcome === "failed") await pgTimeline.add(db, row.id, row.now, "failed", failureDetail(row.errorCode, row.errorMessage));
}

/**
 * The claim, in the caller's transaction. With `parts`, the job's row is locked first, then
 * the cap is checked and the parts reserved under a lock of the location's month: with
 * any number of sends in flight on any number of servers, each sees the others'
 * reservations (docs/usage.md, "Caps"). Over the cap, the job is failed here,
 * `monthly_cap`, and is not claimed.
 */
async function claimIn(client: Queryable, id: number, now: number, monthOf: MonthOf, me: string | null, claim?: Claim): Promise<boolean> {
  const parts = claim?.parts ?? 0;
  if (parts > 0) {
    const capped = await reserve(client, id, parts, monthOf(now));
    if (capped) {
      const refused = { outcome: "failed", errorCode: "monthly_cap", errorMessage: capReached(capped.cap) } as const;
      await recordResult(client, resultRow(id, refused, now, monthOf), me, true);
      return false;
    }
  }
  const key = claim?.idempotencyKey ?? null;
  const tag = claim?.apiKeyTag ?? null;
  const fresh = Boolean(claim?.fresh);
  const claimed = await client.query(CLAIM, [id, now, key, tag, claim?.senderId ?? null, fresh, claim?.gateway ?? "cast", me]);
  if (claimed.rowCount && fresh) await pgTimeline.add(client, id, now, "retry", JOB_TEXTS.fresh);
  return (claimed.rowCount ?? 0) > 0;
}

/**
 * A send's reservation of its parts (src/db/usage-store.ts, prepareReservation, on SQLite):
 * the location's month's use (settled and reserved) plus these must stay within its cap. A
 * job reserves once, while queued; its later attempts are the same send. "capped": refused, nothing reserved.
 */
async function reserve(client: Queryable, id: number, parts: number, month: string): Promise<{ cap: number } | undefined> {
  const job = await client.query<{ location: string }>(`
    SELECT location_id AS location FROM jobs WHERE id = $1 AND state = 'queued' AND reserved_parts = 0 AND counted = 0 FOR UPDATE`, [id]);
  const location = job.rows[0]?.location;
  if (location === undefined) return undefined;
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`usage:${location}:${month}`]);
  const standing = await client.query<{ cap: number | null; used: number }>(
    `SELECT (SELECT monthly_cap FROM usage_caps WHERE location_id = $2) AS cap, ${USED("$2")} AS used`, [month, location],
  );
  const { cap, used } = standing.rows[0]!;
  if (cap !== null && used + parts > cap) return { cap };
  await client.query(`
    INSERT INTO usage_reserved (location_id, month, parts) VALUES ($1, $2, $3)
    ON CONFLICT (location_id, month) DO UPDATE SET parts = usage_reserved.parts + excluded.parts`, [location, month, parts]);
  await client.query("UPDATE jobs SET reserved_parts = $3, usage_month = $2 WHERE id = $1", [id, month, parts]);
  return undefined;
}
