import { randomBytes } from "node:crypto";
import { AppError, notFound } from "../../errors.ts";
import type { Core } from "../index.ts";
import { keyTag } from "../delivery/key-tag.ts";
import { iso } from "../duration.ts";
import { TEST_MESSAGE_PREFIX } from "../ids.ts";
import { getLocationConfig, sendingWith } from "../installs/locations.ts";
import { setLocationConfig } from "../installs/location-config.ts";
import { optOutPhone } from "../operator/optouts.ts";
import { isLow } from "../operator/status.ts";

/**
 * What the settings page shows and changes of its location, each through the function the
 * CLI and the admin API use (setLocationConfig, the balances, the message log, the opt-outs).
 */
export type SettingsCore = Pick<Core, "config" | "tokens" | "phones" | "sms" | "balances" | "gatewayKeys" | "jobs" | "commit" | "now">;


export interface SettingsView {
  location_id: string;
  gateway: "cast" | "android";
  sender_id: string;
  /** The location's own key, masked; "" when it has none. */
  sms_api_key: string;
  /** Which key its messages go with: its own, the operator's shared one, or none (they fail). */
  key_in_use: "own" | "shared" | "none";
  /** The sender ID its messages carry now ("" : the gateway's default). */
  sender_id_in_use: string;
}

export function settingsOf(core: SettingsCore, locationId: string): SettingsView {
  const config = getLocationConfig(core.tokens, locationId, core.phones);
  const record = core.tokens.get(locationId);
  if (!record) throw notFound(locationId);
  const using = sendingWith(record, sharedSending(core));
  const keyInUse = record.smsApiKey ? "own" : using.apiKey ? "shared" : "none";
  return {
    location_id: locationId,
    gateway: config.gateway ?? "cast",
    sender_id: config.sender_id,
    sms_api_key: config.sms_api_key,
    key_in_use: keyInUse,
    sender_id_in_use: using.senderId,
  };
}

/**
 * The page's change: the sender ID and the own API key only, never the gateway's phone
 * settings. On Cast, a sender ID must be one the key approved (the new key, when the same
 * change sets one): Cast would refuse every message sent with another.
 */
export async function changeSettings(core: SettingsCore, locationId: string, input: { sender_id?: unknown; sms_api_key?: unknown }): Promise<SettingsView> {
  const { sender_id: senderId, sms_api_key: newKey } = input;
  if (typeof senderId === "string" && senderId !== "" && settingsOf(core, locationId).gateway === "cast") {
    const apiKey = typeof newKey === "string" && newKey !== "" ? newKey : keyOf(core, locationId);
    if (!apiKey) throw new AppError("BAD_CONFIG", "set an API key first: a sender ID is checked against the key's approved ones");
    const approved = (await core.sms.senderIds(apiKey)).filter((s) => s.channel === "sms").map((s) => s.senderId);
    if (!approved.includes(senderId)) {
      throw new AppError("BAD_CONFIG", `sender ID ${senderId} is not approved for this API key; approved: ${approved.join(", ") || "none"}`);
    }
  }
  setLocationConfig(core.tokens, locationId, input, core.now());
  return settingsOf(core, locationId);
}

/** The sender IDs the key in use may send SMS with (Cast's `GET /api/v1/account/sender-ids`, channel sms). */
export async function senderIdsOf(core: SettingsCore, locationId: string): Promise<{ sender_ids: { sender_id: string; label: string }[] }> {
  const apiKey = keyOf(core, locationId);
  if (!apiKey) return { sender_ids: [] };
  const ids = await core.sms.senderIds(apiKey);
  return { sender_ids: ids.filter((s) => s.channel === "sms").map((s) => ({ sender_id: s.senderId, label: s.label })) };
}

/** The balance of the key in use, read through the balances every status shows (read again when stale). */
export async function balanceOf(core: SettingsCore, locationId: string) {
  const apiKey = keyOf(core, locationId);
  if (!apiKey) return { credits: null, low: false, read_at: null, error: "no API key: set the location's own" };
  await core.balances.refresh([apiKey]);
  const read = core.gatewayKeys.list().find((k) => k.keyTag === keyTag(apiKey));
  const credits = read?.balance ?? null;
  return {
    credits,
    low: isLow(credits, core.config.lowBalanceCredits),
    read_at: read?.balanceAt ? iso(read.balanceAt) : null,
    error: read?.balanceError ?? null,
  };
}

/**
 * A test SMS, queued as a message of the location: the webhook's path from the job table
 * on (opt-outs, sender ID, key, receipts), so it shows in the message log like any other.
 */
export async function queueTestSms(core: SettingsCore, locationId: string, phone: unknown, text: unknown): Promise<{ message_id: string }> {
  const number = optOutPhone(phone);
  const message = typeof text === "string" && text.trim() ? text.slice(0, 480) : "Test message from the SMS settings page.";
  const messageId = `${TEST_MESSAGE_PREFIX}${randomBytes(9).toString("base64url")}`;
  const fresh = { messageId, locationId, contactId: "", phone: number, message, attachments: [] };
  await core.commit(() => core.jobs.enqueue(fresh, core.now()), true);
  return { message_id: messageId };
}

function keyOf(core: SettingsCore, locationId: string): string {
  const record = core.tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return sendingWith(record, sharedSending(core)).apiKey;
}

function sharedSending(core: SettingsCore) {
  return { apiKey: core.config.sms.apiKey, senderId: core.config.sms.senderId, allowedCompanyIds: core.config.allowedCompanyIds };
}
