import { z } from "zod";
import type { LocationRegistry } from "../../db/tokens.ts";
import { API_KEY, SENDER_ID, type Rule } from "../config-values.ts";
import { AppError, notFound } from "../../errors.ts";
import { getLocationConfig, type LocationConfig } from "./locations.ts";
import type { PhoneStore } from "../../db/phones.ts";
import { phoneFields, setPhoneConfig } from "./phone-config.ts";

// Apart from locations.ts so that reading locations (`bridge locations list`) never loads zod.

/** What PUT …/config and `bridge config set` accept. An absent field keeps its value; "" clears it. */
const configChange = z
  .object({ sender_id: setting("sender_id", SENDER_ID), sms_api_key: setting("sms_api_key", API_KEY), ...phoneFields })
  .strict();

function setting(name: string, rule: Rule) {
  return z
    .string({ error: `${name} must be a string` })
    .max(rule.maxLength, `${name} must be at most ${rule.maxLength} characters`)
    .regex(rule.pattern, `${name} ${rule.says}`)
    .optional();
}

/** The one code path behind `PUT /api/admin/locations/{id}/config` and `bridge config set`. */
export function setLocationConfig(tokens: LocationRegistry, locationId: string, input: unknown, now: number, phones?: PhoneStore): LocationConfig {
  const parsed = configChange.safeParse(input);
  if (!parsed.success) {
    throw new AppError("BAD_CONFIG", parsed.error.issues.map((i) => i.message).join("; "));
  }
  const { sender_id, sms_api_key, ...phone } = parsed.data;
  if (!phones && Object.values(phone).some((v) => v !== undefined)) throw new AppError("BAD_CONFIG", "gateway settings cannot be changed here");
  if (tokens.companyOf(locationId) === undefined) throw notFound(locationId);
  // The phone's settings first: a refusal of them leaves the whole change unmade.
  if (phones) setPhoneConfig(phones, locationId, phone, now);
  if (!tokens.setConfig(locationId, { senderId: sender_id, smsApiKey: sms_api_key }, now)) throw notFound(locationId);
  return getLocationConfig(tokens, locationId, phones);
}
