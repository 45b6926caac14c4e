import { z } from "zod";
import type { TokenRecord, TokenStore } from "../db/tokens.ts";
import { AppError, notFound } from "./errors.ts";
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

/** What PUT …/config and `bridge config set` accept. An absent field keeps its value; "" clears it. */
export const configChange = z
  .object({
    sender_id: z
      .string({ error: "sender_id must be a string" })
      .max(11, "sender_id must be at most 11 characters")
      .regex(/^[\w .-]*$/, "sender_id may hold letters, digits, spaces, '.', '-' and '_' only")
      .optional(),
    sms_api_key: z
      .string({ error: "sms_api_key must be a string" })
      .max(256, "sms_api_key must be at most 256 characters")
      .regex(/^\S*$/, "sms_api_key must not contain spaces")
      .optional(),
  })
  .strict();

export type ConfigChange = z.infer<typeof configChange>;

export function listLocations(tokens: TokenStore): LocationView[] {
  return tokens.list().map((r) => ({
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

/** The one code path behind `PUT /api/admin/locations/{id}/config` and `bridge config set`. */
export function setLocationConfig(tokens: TokenStore, locationId: string, input: unknown, now: number): LocationConfig {
  const parsed = configChange.safeParse(input);
  if (!parsed.success) {
    throw new AppError("BAD_CONFIG", parsed.error.issues.map((i) => i.message).join("; "), { status: 400 });
  }
  const change = { senderId: parsed.data.sender_id, smsApiKey: parsed.data.sms_api_key };
  if (!tokens.setConfig(locationId, change, now)) throw notFound(locationId);
  return getLocationConfig(tokens, locationId);
}

function configView(record: TokenRecord): LocationConfig {
  return { location_id: record.locationId, sender_id: record.senderId, sms_api_key: maskSecret(record.smsApiKey) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
