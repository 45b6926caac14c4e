import { ms } from "../../db/ms.ts";
import { OUTCOME_COLUMNS } from "../../db/usage-count.ts";
import type { UsageStore } from "../contract-usage.ts";
import type { CapStanding, UsageRow } from "../types.ts";
import type { Queryable } from "./pool.ts";

/** A location's month ($1) taken: settled, and reserved by sends not settled yet; `location`: the SQL of its id. */
export const USED = (location: string) => `(SELECT coalesce(sum(parts), 0) FROM usage WHERE location_id = ${location} AND month = $1)
  + (SELECT coalesce(sum(parts), 0) FROM usage_reserved WHERE location_id = ${location} AND month = $1)`;

/**
 * What each location used per month and the monthly caps, on PostgreSQL (src/db/usage-store.ts
 * on SQLite). The counting is the job store's, as a message settles; the reservation at a
 * claim is the claim's.
 */
export function pgUsage(db: Queryable): UsageStore {
  return {
    async list(filter) {
      const found = await db.query<UsageRow>(`
        SELECT u.location_id AS "locationId", coalesce(t.location_name, '') AS name, c.monthly_cap AS cap, month, gateway,
          messages, parts, replies, ${OUTCOME_COLUMNS.join(", ")}
        FROM usage AS u LEFT JOIN tokens AS t USING (location_id) LEFT JOIN usage_caps AS c USING (location_id)
        WHERE ($1::text IS NULL OR u.location_id = $1) AND ($2::text IS NULL OR month >= $2) AND ($3::text IS NULL OR month <= $3)
        ORDER BY month COLLATE "C", u.location_id COLLATE "C", gateway COLLATE "C"`, [filter.locationId ?? null, filter.from ?? null, filter.to ?? null]);
      return found.rows;
    },
    async capOf(locationId) {
      return (await db.query<{ cap: number }>("SELECT monthly_cap AS cap FROM usage_caps WHERE location_id = $1", [locationId])).rows[0]?.cap;
    },
    async setCap(locationId, cap, now) {
      // One statement: the cap is written only for a stored location, and says whether it was.
      const found = await db.query<{ known: boolean }>(`
        WITH known AS (SELECT location_id FROM tokens WHERE location_id = $1),
          removed AS (DELETE FROM usage_caps WHERE $2::bigint IS NULL AND location_id IN (SELECT location_id FROM known)),
          written AS (
            INSERT INTO usage_caps (location_id, monthly_cap, updated_at) SELECT location_id, $2, $3 FROM known WHERE $2::bigint IS NOT NULL
            ON CONFLICT (location_id) DO UPDATE SET monthly_cap = excluded.monthly_cap, updated_at = excluded.updated_at)
        SELECT EXISTS (SELECT 1 FROM known) AS known`, [locationId, cap, ms(now)]);
      return found.rows[0]?.known ?? false;
    },
    async used(locationId, month) {
      return (await db.query<{ used: number }>(`SELECT ${USED("$2")} AS used`, [month, locationId])).rows[0]?.used ?? 0;
    },
    async atOrOver(month, percent) {
      const found = await db.query<CapStanding>(`
        SELECT location_id AS "locationId", monthly_cap AS cap, ${USED("usage_caps.location_id")} AS used
        FROM usage_caps ORDER BY location_id COLLATE "C"`, [month]);
      return found.rows.filter((r) => r.used * 100 >= r.cap * percent);
    },
  };
}
