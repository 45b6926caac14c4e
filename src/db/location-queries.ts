import type { Db } from "./index.ts";
import { SealError, type SealContext, type Sealer } from "./sealer.ts";
import type { ApprovalSource, CompanyLocation, LocationListing } from "./location-types.ts";

/** The columns of `tokens` that hold secrets. */
export type SecretColumn = "access_token" | "refresh_token" | "sms_api_key";

/** Where a secret of `tokens` is sealed: it opens only in the same column of the same row. */
export function sealedIn(column: SecretColumn, locationId: string): SealContext {
  return { table: "tokens", column, row: locationId };
}

/** The token store's reads that open no token (tokens.ts): ids, listings, a company's locations. */
export function createLocationReads(db: Db, sealer: Sealer) {
  const selectIds = db.prepare<[], string>("SELECT location_id FROM tokens ORDER BY location_id").pluck();
  const selectListings = db.prepare<[], LocationListing>(`
    SELECT location_id AS locationId, location_name AS name, company_id AS companyId, sender_id AS senderId,
      sms_api_key AS smsApiKey, ${isoTime("expires_at")} AS expiresAt, ${isoTime("installed_at")} AS installedAt,
      ${isoTime("updated_at")} AS updatedAt, refresh_error AS refreshError, approved, approved_by AS approvedBy,
      CASE WHEN uninstalled_at > 0 THEN ${isoTime("uninstalled_at")} END AS uninstalledAt
    FROM tokens ORDER BY location_id`);
  const selectOfCompany = db.prepare<[string], CompanyLocation>(`
    SELECT location_id AS locationId, location_name AS name, uninstalled_at AS uninstalledAt, refresh_error AS refreshError
    FROM tokens WHERE company_id = ? ORDER BY location_id`);
  const selectCompany = db.prepare<[string], string>("SELECT company_id FROM tokens WHERE location_id = ?").pluck();
  return {
    /** Every stored location's id, opening nothing: a record that cannot be opened is still named. */
    ids(): string[] {
      return selectIds.all();
    },
    listings(): LocationListing[] {
      const listings = selectListings.all();
      for (const listing of listings) {
        Object.assign(listing, openListed(sealer, listing.smsApiKey, listing.locationId));
        listing.approved = Boolean(listing.approved);
      }
      return listings;
    },
    /** The company's stored locations, installed or not. */
    ofCompany(companyId: string): CompanyLocation[] {
      return selectOfCompany.all(companyId);
    },
    /** The location's company; undefined when the location is unknown. */
    companyOf(locationId: string): string | undefined {
      return selectCompany.get(locationId);
    },
  };
}

/** The token store's writes of what an operator and HighLevel say of a location (tokens.ts). */
export function createLocationSettings(db: Db, sealer: Sealer) {
  const rename = db.prepare<[{ id: string; name: string }]>(
    "UPDATE tokens SET location_name = @name WHERE location_id = @id AND location_name <> @name",
  );
  const approve = db.prepare<[number, ApprovalSource, number, string]>(
    "UPDATE tokens SET approved = ?, approved_by = ?, updated_at = ? WHERE location_id = ?",
  );
  const uninstalled = db.prepare<[number, number, string]>(
    "UPDATE tokens SET uninstalled_at = ?, updated_at = ? WHERE location_id = ? AND uninstalled_at = 0",
  );
  const updateConfig = db.prepare<[{ id: string; senderId: string | null; smsApiKey: string | null; now: number }]>(`
    UPDATE tokens SET sender_id = coalesce(@senderId, sender_id), sms_api_key = coalesce(@smsApiKey, sms_api_key),
      updated_at = @now
    WHERE location_id = @id`);
  return {
    /** Records the location's name in HighLevel (shown in listings only). */
    setName(locationId: string, name: string): void {
      if (name) rename.run({ id: locationId, name });
    },
    /** An operator lets the location use the global key and sender ID, or withdraws that; false when it is unknown. */
    setApproved(locationId: string, approved: boolean, now: number): boolean {
      return approve.run(approved ? 1 : 0, approved ? "operator" : "withdrawn", now, locationId).changes > 0;
    },
    /** Marks the app uninstalled from the location, keeping its record; false if unknown or already marked. */
    markUninstalled(locationId: string, now: number): boolean {
      return uninstalled.run(now, now, locationId).changes > 0;
    },
    /** Sets what is given; an absent field keeps its value. False when the location is unknown. */
    setConfig(locationId: string, change: { senderId?: string; smsApiKey?: string }, now: number): boolean {
      const smsApiKey = change.smsApiKey === undefined ? null : sealer.seal(change.smsApiKey, sealedIn("sms_api_key", locationId));
      const params = { id: locationId, senderId: change.senderId ?? null, smsApiKey, now };
      return updateConfig.run(params).changes > 0;
    },
  };
}

/**
 * SQL for a ms-since-epoch column as `Date.prototype.toISOString()` writes it, exact to
 * the millisecond. SQLite does it faster than three Date objects a row (docs/PERFORMANCE.md).
 */
function isoTime(column: string): string {
  return `strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch')`;
}

/**
 * A listed location's API key. One the key does not open is listed as such, not thrown:
 * the listing (and the balances serve reads for the keys in use) goes on for the others.
 * Without any key the whole listing fails: nothing sealed could be shown.
 */
export function openListed(sealer: Sealer, stored: string, locationId: string): Pick<LocationListing, "smsApiKey" | "smsApiKeyError"> {
  try {
    return { smsApiKey: sealer.open(stored, sealedIn("sms_api_key", locationId)), smsApiKeyError: "" };
  } catch (error) {
    if (!(error instanceof SealError) || error.reason === "no_key") throw error;
    return { smsApiKey: "", smsApiKeyError: error.message };
  }
}
