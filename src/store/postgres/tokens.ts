import { openListed, sealedIn } from "../../db/location-queries.ts";
import type { Sealer } from "../../db/sealer.ts";
import { tokenRecord, type TokenRow } from "../../db/tokens.ts";
import type { LocationRegistry } from "../contract.ts";
import type { LocationListing } from "../types.ts";
import type { Queryable } from "./pool.ts";
import { changed, pgTokenRows } from "./token-rows.ts";

type Row = TokenRow;

// As src/db/tokens.ts: a reinstall keeps the settings and an earlier approval (or an
// operator's withdrawal) and clears the uninstalled mark.
const UPSERT = `
  INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at, approved, approved_by, location_name)
  VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9)
  ON CONFLICT (location_id) DO UPDATE SET
    company_id = excluded.company_id, access_token = excluded.access_token,
    refresh_token = excluded.refresh_token, expires_at = excluded.expires_at,
    updated_at = excluded.updated_at, refresh_error = '', refresh_lease_until = 0,
    token_serial = tokens.token_serial + 1, uninstalled_at = 0,
    approved = CASE WHEN tokens.approved_by = 'withdrawn' THEN 0 ELSE GREATEST(tokens.approved, excluded.approved) END,
    approved_by = CASE WHEN tokens.approved_by IN ('operator', 'withdrawn') OR excluded.approved = 0 THEN tokens.approved_by ELSE excluded.approved_by END,
    location_name = CASE WHEN excluded.location_name <> '' THEN excluded.location_name ELSE tokens.location_name END`;

/** The location registry on PostgreSQL: the same rows, seals and promises as src/db/tokens.ts. */
export function pgLocations(db: Queryable, sealer: Sealer): LocationRegistry {
  const records = async (sql: string, params: unknown[] = []) => (await db.query<Row>(sql, params)).rows.map((row) => tokenRecord(row, sealer));
  return {
    async save(token, now, approved = false) {
      if (!token.locationId) throw new Error("refusing to store a token record without a location_id");
      const { locationId } = token;
      const access = sealer.seal(token.accessToken, sealedIn("access_token", locationId));
      const refresh = sealer.seal(token.refreshToken, sealedIn("refresh_token", locationId));
      await db.query(UPSERT, [
        locationId, token.companyId, access, refresh, token.expiresAt, now, approved ? 1 : 0, approved ? "allowlist" : "", token.name ?? "",
      ]);
    },
    async get(locationId) {
      return (await records("SELECT * FROM tokens WHERE location_id = $1", [locationId]))[0];
    },
    list: () => records("SELECT * FROM tokens ORDER BY location_id"),
    async ids() {
      return (await db.query<Row>("SELECT location_id FROM tokens ORDER BY location_id")).rows.map((row) => row.location_id);
    },
    listings: () => listings(db, sealer),
    async ofCompany(companyId) {
      const found = await db.query(`
        SELECT location_id AS "locationId", location_name AS name, uninstalled_at AS "uninstalledAt", refresh_error AS "refreshError"
        FROM tokens WHERE company_id = $1 ORDER BY location_id`, [companyId]);
      return found.rows;
    },
    async companyOf(locationId) {
      return (await db.query<Row>("SELECT company_id FROM tokens WHERE location_id = $1", [locationId])).rows[0]?.company_id;
    },
    ...settings(db, sealer),
    ...pgTokenRows(db, sealer, { table: "tokens", id: "location_id" }),
  };
}

/** What an operator and HighLevel say of a location (src/db/location-queries.ts on SQLite). */
function settings(db: Queryable, sealer: Sealer): Pick<LocationRegistry, "setName" | "setApproved" | "markUninstalled" | "setConfig"> {
  return {
    async setName(locationId, name) {
      if (name) await db.query("UPDATE tokens SET location_name = $1 WHERE location_id = $2 AND location_name <> $1", [name, locationId]);
    },
    setApproved: (locationId, approved, now) =>
      changed(db, "UPDATE tokens SET approved = $1, approved_by = $2, updated_at = $3 WHERE location_id = $4", [
        approved ? 1 : 0, approved ? "operator" : "withdrawn", now, locationId,
      ]),
    markUninstalled: (locationId, now) =>
      changed(db, "UPDATE tokens SET uninstalled_at = $1, updated_at = $1 WHERE location_id = $2 AND uninstalled_at = 0", [now, locationId]),
    setConfig(locationId, change, now) {
      const smsApiKey = change.smsApiKey === undefined ? null : sealer.seal(change.smsApiKey, sealedIn("sms_api_key", locationId));
      return changed(db, `
        UPDATE tokens SET sender_id = coalesce($1, sender_id), sms_api_key = coalesce($2, sms_api_key), updated_at = $3
        WHERE location_id = $4`, [change.senderId ?? null, smsApiKey, now, locationId]);
    },
  };
}

async function listings(db: Queryable, sealer: Sealer): Promise<LocationListing[]> {
  const rows = (await db.query<Row>("SELECT * FROM tokens ORDER BY location_id")).rows;
  const iso = (ms: number) => new Date(ms).toISOString();
  return rows.map((row) => ({
    locationId: row.location_id,
    name: row.location_name,
    companyId: row.company_id,
    senderId: row.sender_id,
    ...openListed(sealer, row.sms_api_key, row.location_id),
    expiresAt: iso(row.expires_at),
    installedAt: iso(row.installed_at),
    updatedAt: iso(row.updated_at),
    refreshError: row.refresh_error,
    approved: row.approved === 1,
    approvedBy: row.approved_by,
    uninstalledAt: row.uninstalled_at > 0 ? iso(row.uninstalled_at) : null,
  }));
}
