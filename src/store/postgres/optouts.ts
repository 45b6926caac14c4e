import { ms } from "../../db/ms.ts";
import type { OptOutStore, OutageRecords } from "../contract.ts";
import type { OptOutBy } from "../types.ts";
import type { Queryable } from "./pool.ts";
import { changed } from "./token-rows.ts";

interface Row {
  location_id: string;
  phone: string;
  opted_out_by: OptOutBy;
  opted_out_at: number;
}

/** The locations' opt-out lists on PostgreSQL (src/db/optouts.ts on SQLite). */
export function pgOptOuts(db: Queryable): OptOutStore {
  return {
    add: (optOut) =>
      changed(db, `
        INSERT INTO opt_outs (location_id, phone, opted_out_by, opted_out_at) VALUES ($1, $2, $3, $4)
        ON CONFLICT (location_id, phone) DO NOTHING`, [optOut.locationId, optOut.phone, optOut.by, ms(optOut.at)]),
    remove: (locationId, phone) => changed(db, "DELETE FROM opt_outs WHERE location_id = $1 AND phone = $2", [locationId, phone]),
    async has(locationId, phone) {
      return ((await db.query("SELECT 1 FROM opt_outs WHERE location_id = $1 AND phone = $2", [locationId, phone])).rowCount ?? 0) > 0;
    },
    async list(locationId) {
      const found = await db.query<Row>('SELECT * FROM opt_outs WHERE location_id = $1 ORDER BY opted_out_at DESC, phone COLLATE "C"', [locationId]);
      return found.rows.map((r) => ({ locationId: r.location_id, phone: r.phone, by: r.opted_out_by, at: r.opted_out_at }));
    },
    async counts() {
      const found: Record<OptOutBy, number> = { reply: 0, operator: 0, page: 0 };
      const rows = (await db.query<{ by: OptOutBy; n: number }>("SELECT opted_out_by AS by, count(*) AS n FROM opt_outs GROUP BY opted_out_by")).rows;
      for (const { by, n } of rows) found[by] = n;
      return found;
    },
  };
}

/** The outages serve recorded, on PostgreSQL (src/db/outages.ts on SQLite). */
export function pgOutages(db: Queryable): OutageRecords {
  const count = async (sql: string, params: unknown[] = []) => (await db.query<{ n: number }>(sql, params)).rows[0]?.n ?? 0;
  return {
    async save(outage) {
      await db.query(`
        INSERT INTO outages (remote, since, kind, reason, failed_calls, last_failed_at) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (remote) DO UPDATE SET kind = excluded.kind, reason = excluded.reason,
          failed_calls = excluded.failed_calls, last_failed_at = excluded.last_failed_at`, [
        outage.remote, ms(outage.since), outage.kind, outage.reason, outage.failedCalls, ms(outage.lastFailedAt),
      ]);
    },
    async end(remote) {
      await db.query("DELETE FROM outages WHERE remote = $1", [remote]);
    },
    async clear() {
      await db.query("DELETE FROM outages");
    },
    async list() {
      const rows = (await db.query("SELECT * FROM outages ORDER BY since")).rows;
      return rows.map((r) => ({ remote: r.remote, since: r.since, kind: r.kind, reason: r.reason, failedCalls: r.failed_calls, lastFailedAt: r.last_failed_at }));
    },
    async waits(remote) {
      if (remote === "cast") {
        return count(`SELECT count(*) AS n FROM jobs WHERE state IN ('queued', 'sending') AND held = 0
          AND location_id NOT IN (SELECT location_id FROM location_gateways WHERE gateway = 'android')`);
      }
      if (remote === "crm") {
        return count(`SELECT (SELECT count(*) FROM jobs WHERE state = 'reporting' AND receipt_deadline IS NULL)
          + (SELECT count(*) FROM inbound WHERE state IN ('queued', 'posting')) AS n`);
      }
      if (!remote.startsWith("phone:")) return 0;
      return count(`SELECT count(*) AS n FROM jobs WHERE state IN ('queued', 'sending') AND location_id IN
        (SELECT location_id FROM location_gateways WHERE gateway = 'android' AND android_device = $1)`, [remote.slice("phone:".length)]);
    },
  };
}
