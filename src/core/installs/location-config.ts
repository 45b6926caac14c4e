import { z } from "zod";
import type { TokenStore } from "../../db/tokens.ts";
import { API_KEY, SENDER_ID, type Rule } from "../config-values.ts";
import { AppError, notFound } from "../../errors.ts";
import { getLocationConfig, type LocationConfig } from "./locations.ts";

// Apart from locations.ts so that reading locations (`bridge locations list`) never loads zod.

/** What PUT …/config and `bridge config set` accept. An absent field keeps its value; "" clears it. */
const configChange = z
  .object({ sender_id: setting("sender_id", SENDER_ID), sms_api_key: setting("sms_api_key", API_KEY) })
  .strict();

function setting(name: string, rule: Rule) {
  return z
    .string({ error: `${name} must be a string` })
    .max(rule.maxLength, `${name} must be at most ${rule.maxLength} characters`)
    .regex(rule.pattern, `${name} ${rule.says}`)
    .optional();
}

/** The one code path behind `PUT /api/admin/locations/{id}/config` and `bridge config set`. */
export function setLocationConfig(tokens: TokenStore, locationId: string, input: unknown, now: number): LocationConfig {
  const parsed = configChange.safeParse(input);
  if (!parsed.success) {
    throw new AppError("BAD_CONFIG", parsed.error.issues.map((i) => i.message).join("; "));
  }
  const change = { senderId: parsed.data.sender_id, smsApiKey: parsed.data.sms_api_key };
  if (!tokens.setConfig(locationId, change, now)) throw notFound(locationId);
  return getLocationConfig(tokens, locationId);
}
