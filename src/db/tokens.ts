import { createTokenRows, tokenFields, type TokenColumns, type TokenFields } from "./token-rows.ts";
import { createSealer, type Sealer } from "./sealer.ts";
import type { Db } from "./index.ts";
import type { ApprovalSource } from "./location-types.ts";
import { createLocationReads, createLocationSettings, sealedIn } from "./location-queries.ts";

export { sealedIn, type SecretColumn } from "./location-queries.ts";
export type { ApprovalSource, CompanyLocation, LocationListing } from "./location-types.ts";

/** One CRM location's token record (spec 2.1). Times are ms since the epoch. */
export interface TokenRecord extends TokenFields {
  locationId: string;
  companyId: string;
  /** "" means: use the global default. */
  senderId: string;
  /** "" means: use the global default. */
  smsApiKey: string;
  /** May use the global SMS_API_KEY and SMS_SENDER_ID (docs/configuration.md, "Who may use your gateway key"). */
  approved: boolean;
  approvedBy: ApprovalSource;
  /** When HighLevel confirmed the app uninstalled from it; 0 while installed. */
  uninstalledAt: number;
  /** The location's name in HighLevel; "" when not known. */
  name: string;
}

export interface NewToken {
  locationId: string;
  companyId: string;
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
  /** The location's name, when known; a save without one keeps the name stored. */
  name?: string;
}

export type LocationRegistry = ReturnType<typeof createLocationRegistry>;
/** A row of `tokens` as read (the PostgreSQL store reads the same row). */
export type TokenRow = Row;

interface Row extends TokenColumns {
  location_id: string;
  company_id: string;
  sender_id: string;
  sms_api_key: string;
  approved: number;
  approved_by: ApprovalSource;
  uninstalled_at: number;
  location_name: string;
}

/**
 * The location registry: every installed location with its token pair, its settings (sender
 * ID, API key, approval) and its install state, in the `tokens` table (named after its first
 * column set). Queries are prepared once. Tokens and API keys pass
 * through `sealer`, which encrypts them at rest when a key is configured. The reads
 * that open no token, and a location's settings, are location-queries.ts.
 */
export function createLocationRegistry(db: Db, sealer: Sealer = createSealer(undefined)) {
  // A reinstall keeps the settings and an approval given before, and clears the
  // uninstalled mark. An operator's unapprove outlasts it (a listed company's install,
  // or sync reconnecting one, would approve again), and an operator's approval stays theirs.
  const upsert = db.prepare<[NewToken & { now: number; approved: number; approvedBy: ApprovalSource; name: string }]>(`
    INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at, approved, approved_by, location_name)
    VALUES (@locationId, @companyId, @accessToken, @refreshToken, @expiresAt, @now, @now, @approved, @approvedBy, @name)
    ON CONFLICT (location_id) DO UPDATE SET
      company_id = excluded.company_id, access_token = excluded.access_token,
      refresh_token = excluded.refresh_token, expires_at = excluded.expires_at,
      updated_at = excluded.updated_at, refresh_error = '', refresh_lease_until = 0,
      token_serial = token_serial + 1, uninstalled_at = 0,
      approved = CASE WHEN approved_by = 'withdrawn' THEN 0 ELSE max(approved, excluded.approved) END,
      approved_by = CASE WHEN approved_by IN ('operator', 'withdrawn') OR excluded.approved = 0 THEN approved_by ELSE excluded.approved_by END,
      location_name = CASE WHEN excluded.location_name <> '' THEN excluded.location_name ELSE location_name END`);
  const selectOne = db.prepare<[string], Row>("SELECT * FROM tokens WHERE location_id = ?");
  const selectAll = db.prepare<[], Row>("SELECT * FROM tokens ORDER BY location_id");
  const rows = createTokenRows(db, sealer, { table: "tokens", id: "location_id" });

  return {
    /**
     * Upsert by location_id; installed_at, sender_id, sms_api_key and an earlier approval
     * (or an operator's withdrawal) survive a reinstall. `approved`: its company is in
     * ALLOWED_COMPANY_IDS, so it may use the global key from now on.
     */
    save(token: NewToken, now: number, approved = false): void {
      if (!token.locationId) throw new Error("refusing to store a token record without a location_id");
      const { locationId } = token;
      const sealed = {
        accessToken: sealer.seal(token.accessToken, sealedIn("access_token", locationId)),
        refreshToken: sealer.seal(token.refreshToken, sealedIn("refresh_token", locationId)),
      };
      const approvedBy: ApprovalSource = approved ? "allowlist" : "";
      upsert.run({ ...token, ...sealed, now, approved: approved ? 1 : 0, approvedBy, name: token.name ?? "" });
    },
    get(locationId: string): TokenRecord | undefined {
      const row = selectOne.get(locationId);
      return row && tokenRecord(row, sealer);
    },
    list(): TokenRecord[] {
      return selectAll.all().map((row) => tokenRecord(row, sealer));
    },
    ...createLocationReads(db, sealer),
    ...createLocationSettings(db, sealer),
    ...rows,
  };
}

/** A row of `tokens` as its record, the secrets opened for their row. */
export function tokenRecord(row: Row, sealer: Sealer): TokenRecord {
  return {
    locationId: row.location_id,
    companyId: row.company_id,
    ...tokenFields(row, sealer, "tokens", row.location_id),
    senderId: row.sender_id,
    smsApiKey: sealer.open(row.sms_api_key, sealedIn("sms_api_key", row.location_id)),
    approved: row.approved === 1,
    approvedBy: row.approved_by,
    uninstalledAt: row.uninstalled_at,
    name: row.location_name,
  };
}
