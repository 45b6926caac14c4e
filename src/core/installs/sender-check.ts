import type { SenderId } from "../clients/gateway.ts";
import { AppError, errorMessage } from "../../errors.ts";
import { maskSecret } from "../mask.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { ResolvedConfig } from "../config.ts";
import { sendingWith, type SharedSending } from "./locations.ts";

// The rule a location's sender ID is set by, on Cast: it must be one the key its messages go
// with has approved for SMS (Cast refuses every message sent with another). One rule for
// `bridge config set`, PUT …/config (location-config.ts) and the settings page (src/core/app/settings.ts).

/** How a change's sender ID is checked: the gateway's approved list of a key, and the operator's shared key. */
export interface SenderIdCheck {
  /** The sender IDs approved on a key's account; throws when the gateway cannot say. */
  senderIds(apiKey: string): Promise<SenderId[]>;
  shared: SharedSending;
}

/** The check with the operator's configuration: SMS_API_KEY for the locations it serves. */
export function senderIdCheck(config: Pick<ResolvedConfig, "sms" | "allowedCompanyIds">, senderIds: SenderIdCheck["senderIds"]): SenderIdCheck {
  return { senderIds, shared: { apiKey: config.sms.apiKey, senderId: config.sms.senderId, allowedCompanyIds: config.allowedCompanyIds } };
}

/** Where the sender IDs offered come from: the key's approved list, or (the page, on the shared key) those the operator gave. */
export type OfferedBy = "own_key" | "agency";

/** The approved sender IDs that send SMS (Cast's list holds other channels' too). */
export function smsSenderIds(ids: readonly SenderId[]): SenderId[] {
  return ids.filter((s) => s.channel === "sms");
}

/** The refusal of a sender ID that is not among those offered, naming the ones that are; undefined: it is. */
export function senderIdRefusal(senderId: string, offered: readonly string[], by: OfferedBy): AppError | undefined {
  if (offered.includes(senderId)) return undefined;
  const whose = by === "agency" ? "one your agency gave this location" : "approved for this API key";
  return new AppError("BAD_CONFIG", `sender ID ${senderId} is not ${whose}; ${by === "agency" ? "offered" : "approved"}: ${offered.join(", ") || "none"}`);
}

/**
 * Checks `senderId` for a location about to send with `apiKey` (its own key, a new key of
 * the same change, or the shared one): throws the refusal when the key's approved list
 * lacks it; answers a warning when it could not be checked (no key yet, the gateway not
 * answering: a command works offline), undefined when it passed.
 */
export async function checkSenderId(check: SenderIdCheck, senderId: string, apiKey: string): Promise<string | undefined> {
  if (!apiKey) return `sender ID ${senderId} saved unchecked: the location has no API key to send with yet (its own, or SMS_API_KEY once approved)`;
  let approved: SenderId[];
  try {
    approved = smsSenderIds(await check.senderIds(apiKey));
  } catch (error) {
    return `sender ID ${senderId} saved unchecked: Cast could not list the sender IDs approved on key ${maskSecret(apiKey)} (${errorMessage(error)}); \`bridge doctor\` checks it later`;
  }
  const refusal = senderIdRefusal(senderId, approved.map((s) => s.senderId), "own_key");
  if (refusal) throw refusal;
  return undefined;
}

/** The key a location sends with once a change's `sms_api_key` (undefined: unchanged; "": cleared) is made. */
export function keyAfter(record: TokenRecord, newKey: string | undefined, shared: SharedSending): string {
  return sendingWith({ ...record, smsApiKey: newKey ?? record.smsApiKey }, shared).apiKey;
}
