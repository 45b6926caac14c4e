import { POSTING_HOLD_MS } from "../../db/inbound.ts";
import { ms } from "../../db/ms.ts";
import { DEFAULT_USAGE_ZONE, monthIn, type MonthOf } from "../../db/usage-month.ts";
import type { InboundStore } from "../contract-inbound.ts";
import type { NewInbound } from "../types.ts";
import { idOfKey, isInstalled, pgInboundReads, replyOf } from "./inbound-reads.ts";
import { pgOptOuts } from "./optouts.ts";
import { transaction, type Pool, type Queryable } from "./pool.ts";
import { changed } from "./token-rows.ts";
import { pgUsageCount } from "./usage-count.ts";

type Stored = NewInbound & { state: "unrouted" | "queued" };

// A second server storing the same dedupe key waits on the unique index for the first's
// commit, then writes nothing and reads the first's reply.
const INSERT = `
  INSERT INTO inbound (inbound_id, source, dedupe_key, phone, text, to_number, device_id, received_at, received_ms, source_id,
    location_id, routed_by, opt_out, state, next_attempt_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15)
  ON CONFLICT (dedupe_key) DO NOTHING`;

const ROUTE = `
  UPDATE inbound SET location_id = $2, routed_by = 'operator', state = 'queued', next_attempt_at = $3, updated_at = $3
  WHERE inbound_id = $1 AND state = 'unrouted' RETURNING source`;

/**
 * The replies and their queue on PostgreSQL (src/store/sqlite-inbound.ts over
 * src/db/inbound.ts on SQLite): a reply stored or routed with its count in usage (in the
 * month `monthOf` names) and its stop or start word applied to the location's opt-out list,
 * in one transaction; every move of the queue one conditional statement, so that of two
 * servers only one takes a reply to post it.
 */
export function pgInbound(pool: Pool, monthOf: MonthOf = monthIn(DEFAULT_USAGE_ZONE)): InboundStore {
  const count = (db: Queryable, locationId: string, source: string, now: number) =>
    pgUsageCount.reply(db, locationId, monthOf(now), source === "android" ? "android" : "api");
  async function insert(db: Queryable, row: Stored, now: number): Promise<boolean> {
    const stored = await changed(db, INSERT, [
      row.inboundId, row.source, row.dedupeKey, row.phone, row.text, row.to, row.deviceId, row.receivedAt, ms(row.receivedMs),
      row.sourceId, row.locationId, row.routedBy, row.optOut, row.state, ms(now),
    ]);
    if (stored && row.locationId) await count(db, row.locationId, row.source, now);
    return stored;
  }
  async function route(db: Queryable, inboundId: string, locationId: string, now: number): Promise<boolean> {
    const source = (await db.query<{ source: string }>(ROUTE, [inboundId, locationId, ms(now)])).rows[0]?.source;
    if (source !== undefined) await count(db, locationId, source, now);
    return source !== undefined;
  }
  return {
    ...pgInboundReads(pool),
    ...queueMoves(pool),
    receive: (row, now) =>
      transaction(pool, async (client) => {
        if (!(await insert(client, { ...row, state: row.locationId ? "queued" : "unrouted" }, now))) return idOfKey(client, row.dedupeKey);
        await applyOptOut(client, row, now);
        return undefined;
      }),
    assign: (inboundId, locationId, now) =>
      transaction(pool, async (client) => {
        // Locked: of two operators routing one reply, the second finds it routed.
        const reply = await replyOf(client, inboundId, true);
        if (!reply) return { why: "not_found" } as const;
        if (reply.state !== "unrouted") return { why: "routed", locationId: reply.locationId } as const;
        if (!(await isInstalled(client, locationId))) return { why: "not_installed" } as const;
        await route(client, inboundId, locationId, now);
        await applyOptOut(client, { ...reply, locationId }, now);
        return undefined;
      }),
    insert: (row, now) => transaction(pool, (client) => insert(client, row, now)),
    route: (inboundId, locationId, now) => transaction(pool, (client) => route(client, inboundId, locationId, now)),
  };
}

/** A routed reply's stop word puts its sender on the location's opt-out list, a start word takes it off: on the reply's own client. */
async function applyOptOut(client: Queryable, row: Pick<NewInbound, "optOut" | "locationId" | "phone">, now: number): Promise<void> {
  if (!row.optOut || !row.locationId) return;
  const optOuts = pgOptOuts(client);
  if (row.optOut === "stop") await optOuts.add({ locationId: row.locationId, phone: row.phone, by: "reply", at: now });
  else await optOuts.remove(row.locationId, row.phone);
}

/** The queue's moves of a reply, each one statement conditional on its state: a move a reply is past changes nothing. */
function queueMoves(db: Queryable): Pick<InboundStore, "setContact" | "markPosting" | "resumePosting" | "posted" | "retryLater" | "lookLater" | "giveUp" | "prune"> {
  return {
    async setContact(id, contactId, now) {
      await db.query("UPDATE inbound SET contact_id = $1, updated_at = $2 WHERE id = $3 AND state = 'queued'", [contactId, ms(now), id]);
    },
    // Of two servers taking the reply at once, the second waits for the first's row lock, then finds it posting.
    markPosting: (id, now) => changed(db, `UPDATE inbound SET state = 'posting', looks = 0, updated_at = $1::bigint, next_attempt_at = $1::bigint + ${POSTING_HOLD_MS}
      WHERE id = $2 AND state = 'queued'`, [ms(now), id]),
    async resumePosting(now) {
      const resumed = await db.query("UPDATE inbound SET next_attempt_at = LEAST(next_attempt_at, $1) WHERE state = 'posting'", [ms(now)]);
      return resumed.rowCount ?? 0;
    },
    async posted(id, crmMessageId, now) {
      await db.query("UPDATE inbound SET state = 'done', crm_message_id = $1, error = NULL, updated_at = $2 WHERE id = $3 AND state = 'posting'", [
        crmMessageId, ms(now), id,
      ]);
    },
    async retryLater(id, at, error, now, counted = true) {
      await db.query(`UPDATE inbound SET state = 'queued', attempts = attempts + $2, next_attempt_at = $3, error = $4, updated_at = $5
        WHERE id = $1 AND state IN ('queued', 'posting')`, [id, counted ? 1 : 0, ms(at), error, ms(now)]);
    },
    async lookLater(id, at, error, now, counted, looks) {
      await db.query(`UPDATE inbound SET attempts = attempts + $2, looks = $6, next_attempt_at = $3, error = $4, updated_at = $5
        WHERE id = $1 AND state = 'posting'`, [id, counted ? 1 : 0, ms(at), error, ms(now), looks]);
    },
    async giveUp(id, error, now) {
      await db.query("UPDATE inbound SET state = 'dead', error = $1, updated_at = $2 WHERE id = $3 AND state IN ('queued', 'posting')", [error, ms(now), id]);
    },
    async prune(before, limit) {
      const found = await db.query(`DELETE FROM inbound WHERE id IN
        (SELECT id FROM inbound WHERE state IN ('done', 'dead') AND updated_at < $1 LIMIT $2)`, [ms(before), limit]);
      return found.rowCount ?? 0;
    },
  };
}
