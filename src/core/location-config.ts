import { z } from "zod";
import type { TokenStore } from "../db/tokens.ts";
import { AppError, notFound } from "./errors.ts";
import { getLocationConfig, type LocationConfig } from "./locations.ts";

// Apart from locations.ts so that reading locations (`bridge locations list`) never loads zod.

/** What PUT …/config and `bridge config set` accept. An absent field keeps its value; "" clears it. */
const configChange = z
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
