import { z } from "zod";
import type { LocationRegistry } from "../../store/contract.ts";
import { API_KEY, SENDER_ID, type Rule } from "../config-values.ts";
import { AppError, notFound } from "../../errors.ts";
import { getLocationConfig, withCap, type Caps, type LocationConfig } from "./locations.ts";
import type { PhoneStore } from "../../store/contract.ts";
import { phoneFields, setPhoneConfig } from "./phone-config.ts";
import { checkSenderId, keyAfter, type SenderIdCheck } from "./sender-check.ts";

// Apart from locations.ts so that reading locations (`bridge locations list`) never loads zod.

/** What PUT …/config and `bridge config set` accept. An absent field keeps its value; "" clears it. */
const configChange = z
  .object({ sender_id: setting("sender_id", SENDER_ID), sms_api_key: setting("sms_api_key", API_KEY), monthly_cap: monthlyCap(), ...phoneFields })
  .strict();

/** SMS parts a month (a whole number, 0 to a billion), or null: no cap (docs/usage.md, "Caps"). */
function monthlyCap() {
  const says = "monthly_cap must be a whole number of SMS parts (0 to 1000000000), or null for none";
  return z.number({ error: says }).int(says).min(0, says).max(1_000_000_000, says).nullable().optional();
}

function setting(name: string, rule: Rule) {
  return z
    .string({ error: `${name} must be a string` })
    .max(rule.maxLength, `${name} must be at most ${rule.maxLength} characters`)
    .regex(rule.pattern, `${name} ${rule.says}`)
    .optional();
}

/** A location's configuration as a change left it; `warning`: the change was made, and what could not be checked of it. */
export type ConfigChanged = LocationConfig & { warning?: string; monthly_cap?: number | null };

/**
 * The one code path behind `PUT /api/admin/locations/{id}/config` and `bridge config set`.
 * With `check`, a sender ID for a location on Cast is checked against the key it will send
 * with (sender-check.ts): refused, nothing is changed.
 */
export async function setLocationConfig(
  tokens: LocationRegistry,
  locationId: string,
  input: unknown,
  now: number,
  phones?: PhoneStore,
  check?: SenderIdCheck,
  caps?: Caps,
): Promise<ConfigChanged> {
  const parsed = configChange.safeParse(input);
  if (!parsed.success) {
    throw new AppError("BAD_CONFIG", parsed.error.issues.map((i) => i.message).join("; "));
  }
  const { sender_id, sms_api_key, monthly_cap, ...phone } = parsed.data;
  if (!phones && Object.values(phone).some((v) => v !== undefined)) throw new AppError("BAD_CONFIG", "gateway settings cannot be changed here");
  if (!caps && monthly_cap !== undefined) throw new AppError("BAD_CONFIG", "the monthly cap cannot be changed here");
  if ((await tokens.companyOf(locationId)) === undefined) throw notFound(locationId);
  const warning = check && sender_id ? await senderIdWarning(tokens, phones, locationId, { sender_id, sms_api_key, gateway: phone.gateway }, check) : undefined;
  // The phone's settings first: a refusal of them leaves the whole change unmade.
  if (phones) await setPhoneConfig(phones, locationId, phone, now);
  if (!(await tokens.setConfig(locationId, { senderId: sender_id, smsApiKey: sms_api_key }, now))) throw notFound(locationId);
  if (caps && monthly_cap !== undefined) await caps.setCap(locationId, monthly_cap, now);
  const config = caps ? await withCap(await getLocationConfig(tokens, locationId, phones), caps) : await getLocationConfig(tokens, locationId, phones);
  return warning ? { ...config, warning } : config;
}

/** checkSenderId for a location that will send on Cast once the change is made (a phone's location has no sender ID to check). */
async function senderIdWarning(
  tokens: LocationRegistry,
  phones: PhoneStore | undefined,
  locationId: string,
  change: { sender_id: string; sms_api_key?: string; gateway?: string },
  check: SenderIdCheck,
): Promise<string | undefined> {
  if ((change.gateway ?? (await getLocationConfig(tokens, locationId, phones)).gateway ?? "cast") !== "cast") return undefined;
  const record = await tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return checkSenderId(check, change.sender_id, keyAfter(record, change.sms_api_key, check.shared));
}
