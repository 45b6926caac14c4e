import type { LocationListing, TokenRecord, TokenStore } from "../db/tokens.ts";
import { notFound } from "../errors.ts";
import { maskSecret } from "./mask.ts";

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
  uninstalled_at: string | null;
}

export interface LocationConfig {
  location_id: string;
  sender_id: string;
  sms_api_key: string;
}

/**
 * The API key and sender ID a location's messages go with: its own, else the operator's
 * (SMS_API_KEY, SMS_SENDER_ID), which serve only approved locations (CONTRACT.md 12):
 * whoever can authorize the app must not send on the operator's account and brand.
 * "" : none. The one rule outbound sends by and doctor checks.
 */
export function sendingWith(record: Pick<TokenRecord, "approved" | "smsApiKey" | "senderId">, defaults: { apiKey: string; senderId: string }) {
  const shared = record.approved ? defaults : { apiKey: "", senderId: "" };
  return { apiKey: record.smsApiKey || shared.apiKey, senderId: record.senderId || shared.senderId };
}

export function listLocations(tokens: TokenStore): LocationView[] {
  return tokens.listings().map(view);
}

function view(l: LocationListing): LocationView {
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
    uninstalled_at: l.uninstalledAt,
  };
}

/**
 * Lets a pending location use the global SMS_API_KEY and SMS_SENDER_ID (CONTRACT.md 12):
 * the one code path of `bridge locations approve` and `POST …/approve`.
 */
export function approveLocation(tokens: TokenStore, locationId: string, now: number): { location_id: string; approved: true } {
  if (!tokens.approve(locationId, now)) throw notFound(locationId);
  return { location_id: locationId, approved: true };
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
