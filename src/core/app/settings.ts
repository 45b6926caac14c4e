import { AppError, notFound } from "../../errors.ts";
import type { Store } from "../../store/contract.ts";
import type { GatewayDriver } from "../clients/gateway.ts";
import type { ResolvedConfig } from "../config.ts";
import type { Balances } from "../operator/balances.ts";
import { keyTag } from "../key-tag.ts";
import { getLocationConfig, sendingWith } from "../installs/locations.ts";
import { setLocationConfig } from "../installs/location-config.ts";
import { senderIdRefusal, smsSenderIds } from "../installs/sender-check.ts";
import type { PageCalls } from "./page-calls.ts";

/**
 * What the settings page shows and changes of its location, each through the function the
 * CLI and the admin API use (setLocationConfig, the balances, the message log, the opt-outs),
 * and every call at Cast or a phone through `calls` (page-calls.ts).
 */
export type SettingsCore = Pick<Store, "tokens" | "phones" | "gatewayKeys" | "jobs" | "messages"> & {
  config: ResolvedConfig;
  clients: { cast: GatewayDriver };
  operator: { balances: Balances };
  now: () => number;
  calls: PageCalls;
};

export interface SettingsView {
  location_id: string;
  /** The location's name in HighLevel; "" when not known. */
  location_name: string;
  gateway: "cast" | "android";
  sender_id: string;
  /** The location's own key, masked; "" when it has none. */
  sms_api_key: string;
  /** Which key its messages go with: its own, the operator's shared one, or none (they fail). */
  key_in_use: "own" | "shared" | "none";
  /** The sender ID its messages carry now ("" : the gateway's default). */
  sender_id_in_use: string;
}

/** Where the location's sender IDs and credits come from: its own key, its agency's (the shared key), its phone, or nowhere. */
export type ProvidedBy = "own_key" | "agency" | "phone" | "none";

export interface SenderIdOffer {
  sender_ids: { sender_id: string; label: string }[];
  source: ProvidedBy;
}

export async function settingsOf(core: SettingsCore, locationId: string): Promise<SettingsView> {
  const config = await getLocationConfig(core.tokens, locationId, core.phones);
  const record = await core.tokens.get(locationId);
  if (!record) throw notFound(locationId);
  const using = sendingWith(record, sharedSending(core));
  const keyInUse = record.smsApiKey ? "own" : using.apiKey ? "shared" : "none";
  return {
    location_id: locationId,
    location_name: record.name ?? "",
    gateway: config.gateway ?? "cast",
    sender_id: config.sender_id,
    sms_api_key: config.sms_api_key,
    key_in_use: keyInUse,
    sender_id_in_use: using.senderId,
  };
}

/**
 * The page's change: the sender ID and the own API key only, never the gateway's phone
 * settings. On Cast, a sender ID must be one the page offers (senderIdsOf; with a new key
 * in the same change, that key's approved ones), by the rule `bridge config set` checks
 * (sender-check.ts): Cast would refuse every message sent with another, and on the shared
 * key the operator's other sender IDs are not the location's.
 */
export async function changeSettings(core: SettingsCore, locationId: string, input: { sender_id?: unknown; sms_api_key?: unknown }): Promise<SettingsView> {
  const change = await leavingOwnKey(core, locationId, input);
  const { sender_id: senderId, sms_api_key: newKey } = change;
  const { gateway } = await settingsOf(core, locationId);
  if (typeof senderId === "string" && senderId !== "" && gateway === "android") {
    throw new AppError("BAD_CONFIG", "this sub-account sends through a phone, from the phone's own number: it has no sender ID");
  }
  if (typeof senderId === "string" && senderId !== "" && gateway === "cast") {
    const offer = typeof newKey === "string" && newKey !== "" ? await approvedOf(core, newKey) : await senderIdsOf(core, locationId);
    const offered = offer.sender_ids.map((s) => s.sender_id);
    if (offer.source !== "own_key" && offer.source !== "agency") {
      throw new AppError("BAD_CONFIG", "set an API key first: a sender ID is checked against the key's approved ones");
    }
    const refusal = senderIdRefusal(senderId, offered, offer.source);
    if (refusal) throw refusal;
  }
  await setLocationConfig(core.tokens, locationId, change, core.now());
  return settingsOf(core, locationId);
}

/**
 * A change that removes the location's own key moves it to the agency's: its sender ID
 * was checked against its own key's account, not given by the agency, so it goes back to
 * the agency's default (SMS_SENDER_ID), and the only one the change may set is that one.
 */
async function leavingOwnKey(core: SettingsCore, locationId: string, input: { sender_id?: unknown; sms_api_key?: unknown }) {
  if (input.sms_api_key !== "" || !(await core.tokens.get(locationId))?.smsApiKey) return input;
  const senderId = typeof input.sender_id === "string" ? input.sender_id : "";
  const refusal = senderId === "" ? undefined : senderIdRefusal(senderId, [core.config.sms.senderId].filter(Boolean), "agency");
  if (refusal) throw refusal;
  return { ...input, sender_id: "" };
}

/**
 * The sender IDs the page offers: with the location's own key, that key's approved SMS
 * ones (Cast's `GET /api/v1/account/sender-ids`, kept a minute); on the shared key only
 * those the operator gave the location (its configured one and SMS_SENDER_ID), with no
 * call at Cast: the shared account's others are the operator's and other tenants'.
 */
export async function senderIdsOf(core: SettingsCore, locationId: string): Promise<SenderIdOffer> {
  const { source, apiKey } = await providerOf(core, locationId);
  if (source === "own_key") return approvedOf(core, apiKey);
  if (source !== "agency") return { sender_ids: [], source };
  const record = await core.tokens.get(locationId);
  const given = [...new Set([record?.senderId ?? "", core.config.sms.senderId])].filter((s) => s !== "");
  return { sender_ids: given.map((sender_id) => ({ sender_id, label: "" })), source };
}

/** Where the location's SMS come from, and the key they go with ("" but for its own key or the shared one). */
export async function providerOf(core: SettingsCore, locationId: string): Promise<{ source: ProvidedBy; apiKey: string }> {
  const view = await settingsOf(core, locationId);
  if (view.gateway === "android") return { source: "phone", apiKey: "" };
  const apiKey = await keyOf(core, locationId);
  return { source: view.key_in_use === "own" ? "own_key" : view.key_in_use === "shared" ? "agency" : "none", apiKey };
}

async function approvedOf(core: SettingsCore, apiKey: string): Promise<SenderIdOffer> {
  const ids = await core.calls.cached(`sender-ids ${keyTag(apiKey)}`, () => core.clients.cast.senderIds(apiKey));
  return { sender_ids: smsSenderIds(ids).map((s) => ({ sender_id: s.senderId, label: s.label })), source: "own_key" };
}

async function keyOf(core: SettingsCore, locationId: string): Promise<string> {
  const record = await core.tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return sendingWith(record, sharedSending(core)).apiKey;
}

function sharedSending(core: SettingsCore) {
  return { apiKey: core.config.sms.apiKey, senderId: core.config.sms.senderId, allowedCompanyIds: core.config.allowedCompanyIds };
}
