import { FIRST_OF_CONTACT, INBOUND_COLUMNS, WAITING } from "../../db/inbound.ts";
import { ms } from "../../db/ms.ts";
import type { InboundStore } from "../contract-inbound.ts";
import type { InboundRow, InboundState } from "../types.ts";
import type { Queryable } from "./pool.ts";

/** The reply stored as `inboundId`; `lock`: its row locked until the caller's transaction ends. */
export async function replyOf(db: Queryable, inboundId: string, lock = false): Promise<InboundRow | undefined> {
  const sql = `SELECT ${INBOUND_COLUMNS} FROM inbound WHERE inbound_id = $1${lock ? " FOR UPDATE" : ""}`;
  return (await db.query<InboundRow>(sql, [inboundId])).rows[0];
}

/** An installed location (not uninstalled) of this id. */
export async function isInstalled(db: Queryable, locationId: string): Promise<boolean> {
  return ((await db.query("SELECT 1 FROM tokens WHERE location_id = $1 AND uninstalled_at = 0", [locationId])).rowCount ?? 0) > 0;
}

/** bridge's id of the reply stored under this dedupe key. */
export async function idOfKey(db: Queryable, dedupeKey: string): Promise<string | undefined> {
  return (await db.query<{ inboundId: string }>('SELECT inbound_id AS "inboundId" FROM inbound WHERE dedupe_key = $1', [dedupeKey])).rows[0]?.inboundId;
}

/** The installed location whose job to one of these phones came last; $3, when given, the key it was sent with. */
const LAST_SENT = `
  SELECT jobs.location_id AS "locationId" FROM jobs JOIN tokens ON tokens.location_id = jobs.location_id
  WHERE payload::jsonb ->> 'phone' IN ($1, $2) AND ($3::text IS NULL OR jobs.api_key_tag = $3) AND tokens.uninstalled_at = 0
  ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 1`;

/** The replies' reads on PostgreSQL (src/db/inbound.ts on SQLite), each one statement. */
export function pgInboundReads(db: Queryable): Pick<InboundStore, "idOfKey" | "get" | "byId" | "due" | "nextDue" | "list" | "claimed" | "counts" | "installed" | "lastSentTo"> {
  return {
    idOfKey: (dedupeKey) => idOfKey(db, dedupeKey),
    get: (inboundId) => replyOf(db, inboundId),
    async byId(id) {
      return (await db.query<InboundRow>(`SELECT ${INBOUND_COLUMNS} FROM inbound WHERE id = $1`, [id])).rows[0];
    },
    async due(now, limit) {
      const found = await db.query<{ id: number }>(
        `SELECT id FROM inbound AS i WHERE ${WAITING} AND next_attempt_at <= $1 AND ${FIRST_OF_CONTACT} ORDER BY next_attempt_at, id LIMIT $2`,
        [ms(now), limit],
      );
      return found.rows.map((r) => r.id);
    },
    async nextDue() {
      const found = await db.query<{ at: number | null }>(`SELECT min(next_attempt_at) AS at FROM inbound AS i WHERE ${WAITING} AND ${FIRST_OF_CONTACT}`);
      return found.rows[0]?.at ?? undefined;
    },
    async list(filter) {
      const found = await db.query<InboundRow>(`
        SELECT ${INBOUND_COLUMNS} FROM inbound
        WHERE ($1::text IS NULL OR location_id = $1) AND ($2::text[] IS NULL OR state = ANY ($2)) AND ($3::bigint IS NULL OR created_at >= $3)
        ORDER BY created_at DESC, id DESC LIMIT $4`, [filter.locationId ?? null, filter.states ?? null, filter.since ?? null, filter.limit]);
      return found.rows;
    },
    async claimed(id, crmMessageId) {
      return ((await db.query("SELECT 1 FROM inbound WHERE crm_message_id = $1 AND id <> $2", [crmMessageId, id])).rowCount ?? 0) > 0;
    },
    async counts() {
      const all: Record<InboundState, number> = { unrouted: 0, queued: 0, posting: 0, done: 0, dead: 0 };
      const found = await db.query<{ state: InboundState; n: number }>("SELECT state, count(*) AS n FROM inbound GROUP BY state");
      for (const { state, n } of found.rows) all[state] = n;
      return all;
    },
    installed: (locationId) => isInstalled(db, locationId),
    async lastSentTo(e164, local, apiKeyTag) {
      return (await db.query<{ locationId: string }>(LAST_SENT, [e164, local, apiKeyTag ?? null])).rows[0]?.locationId;
    },
  };
}
