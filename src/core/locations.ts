import type { TokenRecord, TokenStore } from "../db/tokens.ts";
import { notFound } from "./errors.ts";
import { maskSecret } from "./mask.ts";

/** A location as the admin API and `bridge locations list` show it: never a token. */
export interface LocationView {
  location_id: string;
  company_id: string;
  sender_id: string;
  sms_api_key: string;
  expires_at: string;
  installed_at: string;
  updated_at: string;
  /** Why the location needs a reinstall; "" when it is healthy. */
  refresh_error: string;
}

export interface LocationConfig {
  location_id: string;
  sender_id: string;
  sms_api_key: string;
}

export function listLocations(tokens: TokenStore): LocationView[] {
  return tokens.summaries().map((r) => ({
    location_id: r.locationId,
    company_id: r.companyId,
    sender_id: r.senderId,
    sms_api_key: maskSecret(r.smsApiKey),
    expires_at: iso(r.expiresAt),
    installed_at: iso(r.installedAt),
    updated_at: iso(r.updatedAt),
    refresh_error: r.refreshError,
  }));
}

export function getLocationConfig(tokens: TokenStore, locationId: string): LocationConfig {
  const record = tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return configView(record);
}

function configView(record: TokenRecord): LocationConfig {
  return { location_id: record.locationId, sender_id: record.senderId, sms_api_key: maskSecret(record.smsApiKey) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
