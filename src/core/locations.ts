import type { LocationListing, TokenRecord, TokenStore } from "../db/tokens.ts";
import { notFound } from "../errors.ts";
import { maskSecret } from "./mask.ts";
import { withoutControls } from "./printable.ts";

/** A location as the admin API and `bridge locations list` show it: never a token, the API key masked. */
export interface LocationView {
  location_id: string;
  name: string;
  company_id: string;
  sender_id: string;
  sms_api_key: string;
  expires_at: string;
  installed_at: string;
  updated_at: string;
  refresh_error: string;
  approved: boolean;
  /** Approved, yet ALLOWED_COMPANY_IDS keeps it from the operator's key and sender ID. */
  off_list: boolean;
  uninstalled_at: string | null;
}

export interface LocationConfig {
  location_id: string;
  sender_id: string;
  sms_api_key: string;
}

/** The operator's SMS_API_KEY and SMS_SENDER_ID, and ALLOWED_COMPANY_IDS, the companies they may serve. */
export interface SharedSending {
  apiKey: string;
  senderId: string;
  allowedCompanyIds: readonly string[];
}

/**
 * The API key and sender ID a location's messages go with: its own, else the operator's
 * (SMS_API_KEY, SMS_SENDER_ID), which serve only the locations `sharedRefusal` lets in
 * (CONTRACT.md 12): whoever can authorize the app must not send on the operator's account
 * and brand. "" : none. The one rule outbound sends by and doctor checks.
 */
export function sendingWith(record: SharedGate & Pick<TokenRecord, "smsApiKey" | "senderId">, shared: SharedSending) {
  const defaults = sharedRefusal(record, shared.allowedCompanyIds) ? { apiKey: "", senderId: "" } : shared;
  return { apiKey: record.smsApiKey || defaults.apiKey, senderId: record.senderId || defaults.senderId };
}

type SharedGate = Pick<TokenRecord, "approved" | "companyId">;

/**
 * Why a location may not use the operator's key and sender ID ("location X …"); undefined:
 * it may. It must be approved and, while ALLOWED_COMPANY_IDS is set, of a listed company,
 * checked at every send: taking a company off the list withdraws it at the next message.
 * The list is the gate for every approval, whoever gave it: schema migration 2 approved
 * every location stored before approvals existed (strangers' installs included), and a
 * database cannot tell those from an operator's, so no approval outlives the list.
 * Without a list, approvals alone decide, so a bridge run without one keeps working.
 */
export function sharedRefusal(record: SharedGate, allowedCompanyIds: readonly string[]): string | undefined {
  if (!record.approved) return "is not approved to use the shared gateway key";
  if (allowedCompanyIds.length === 0 || allowedCompanyIds.includes(record.companyId)) return undefined;
  return `belongs to company ${record.companyId || "(none)"}, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key`;
}

/**
 * Approved locations the list keeps from the operator's key: what `serve` warns about
 * at start and doctor names. None without a list.
 */
export function approvedOffList(tokens: TokenStore, allowedCompanyIds: readonly string[]): LocationListing[] {
  if (allowedCompanyIds.length === 0) return [];
  return tokens.listings().filter((l) => l.approved && !l.uninstalledAt && sharedRefusal(l, allowedCompanyIds));
}

/**
 * Names are cleaned of control characters as they come in from HighLevel; one stored by
 * an older bridge may still hold them, so `serve` cleans those at start. Returns how many
 * it cleaned. A name of nothing but controls stays as stored: every output escapes it.
 */
export function cleanStoredNames(tokens: TokenStore): number {
  let cleaned = 0;
  for (const { locationId, name } of tokens.listings()) {
    const clean = withoutControls(name);
    if (clean === name || !clean) continue;
    tokens.setName(locationId, clean);
    cleaned++;
  }
  return cleaned;
}

/** The warning `serve` logs and doctor shows for `approvedOffList`'s locations. */
export function offListWarning(locations: readonly LocationListing[]): string {
  const named = locations.slice(0, 10).map((l) => `${l.locationId} (company ${l.companyId || "(none)"})`);
  const more = locations.length > 10 ? ` and ${locations.length - 10} more` : "";
  return (
    `${locations.length} approved location(s) of companies not in ALLOWED_COMPANY_IDS: ${named.join(", ")}${more}; ` +
    "they may not use SMS_API_KEY or SMS_SENDER_ID (their messages are reported failed): " +
    "`bridge locations unapprove` the ones you do not know, or add their company to ALLOWED_COMPANY_IDS"
  );
}

export function listLocations(tokens: TokenStore, allowedCompanyIds: readonly string[]): LocationView[] {
  return tokens.listings().map((l) => view(l, allowedCompanyIds));
}

function view(l: LocationListing, allowedCompanyIds: readonly string[]): LocationView {
  return {
    location_id: l.locationId,
    name: l.name,
    company_id: l.companyId,
    sender_id: l.senderId,
    // Not "": that would read as "no key of its own" (bridge status says why).
    sms_api_key: l.smsApiKeyError ? "(cannot be opened)" : maskSecret(l.smsApiKey),
    expires_at: l.expiresAt,
    installed_at: l.installedAt,
    updated_at: l.updatedAt,
    refresh_error: l.refreshError,
    approved: l.approved,
    off_list: l.approved && sharedRefusal(l, allowedCompanyIds) !== undefined,
    uninstalled_at: l.uninstalledAt,
  };
}

/**
 * Lets a pending location use the global SMS_API_KEY and SMS_SENDER_ID (CONTRACT.md 12),
 * or withdraws that: the one code path of `bridge locations approve|unapprove` and
 * `POST …/approve|unapprove`. With ALLOWED_COMPANY_IDS set, an approval counts only for a
 * listed company (`sharedRefusal`).
 */
export function setApproval(
  tokens: TokenStore,
  locationId: string,
  approved: boolean,
  now: number,
): { location_id: string; approved: boolean } {
  if (!tokens.setApproved(locationId, approved, now)) throw notFound(locationId);
  return { location_id: locationId, approved };
}

/** Deletes a location's record (token, settings); its messages stay in the log. */
export function removeLocation(tokens: TokenStore, locationId: string): void {
  if (!tokens.delete(locationId)) throw notFound(locationId);
}

export function getLocationConfig(tokens: TokenStore, locationId: string): LocationConfig {
  const record = tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return configView(record);
}

function configView(record: TokenRecord): LocationConfig {
  return { location_id: record.locationId, sender_id: record.senderId, sms_api_key: maskSecret(record.smsApiKey) };
}
