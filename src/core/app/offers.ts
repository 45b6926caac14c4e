import { keyTag } from "../key-tag.ts";
import { phoneKey } from "../phone-key.ts";
import { iso } from "../duration.ts";
import { checkLocationPhone } from "../operator/phones.ts";
import { isLow } from "../operator/status.ts";
import { providerOf, type ProvidedBy, type SettingsCore } from "./settings.ts";

/** How long the page waits for its phone to answer (doctor waits as long). */
const PHONE_TIMEOUT_MS = 5000;

export interface BalanceView {
  provided_by: ProvidedBy;
  credits: number | null;
  low: boolean;
  read_at: string | null;
  error: string | null;
  note?: string;
}

export type PhoneView = { gateway: "cast" } | { gateway: "android"; status: "ok" | "warn" | "fail"; detail: string };

/**
 * What the page says of each state of its phone. Never doctor's text: that names the
 * phone's address, which is the operator's network, not the tenant's business.
 */
const PHONE_SAYS = {
  ok: "the phone answers, and its messages and replies reach bridge",
  warn: "the phone answers, but needs your agency's attention (its webhooks or signing key, or the app reports a problem)",
  fail: "the phone does not answer: check that it is on and online, and that the SMS Gateway app is running",
} as const;

/**
 * The credits of the location's own key (read through the balances every status shows,
 * at most once a minute for the page). The shared key's balance is the operator's account,
 * never shown to a tenant: "SMS provided by your agency". A phone has no credits at Cast.
 */
export async function balanceOf(core: SettingsCore, locationId: string): Promise<BalanceView> {
  const { source, apiKey } = await providerOf(core, locationId);
  const none = { provided_by: source, credits: null, low: false, read_at: null, error: null };
  if (source === "agency") return { ...none, note: "SMS provided by your agency" };
  if (source === "none") return { ...none, error: "no API key: set the location's own" };
  if (source === "phone") return none;
  await core.calls.cached(`balance ${keyTag(apiKey)}`, () => core.operator.balances.refresh([apiKey]));
  const read = (await core.gatewayKeys.list()).find((k) => k.keyTag === keyTag(apiKey));
  const credits = read?.balance ?? null;
  return {
    provided_by: source,
    credits,
    low: isLow(credits, core.config.lowBalanceCredits),
    read_at: read?.balanceAt ? iso(read.balanceAt) : null,
    error: read?.balanceError ?? null,
  };
}

/**
 * Whether the location's phone answers, doctor's check of it alone, asked at most once a
 * minute and only while no send of that phone waits; told in the page's words.
 */
export async function phoneOf(core: SettingsCore, locationId: string): Promise<PhoneView> {
  const settings = await core.phones.get(locationId);
  if (settings.gateway !== "android" || !settings.url || !settings.deviceId) return { gateway: "cast" };
  const key = phoneKey(settings.deviceId);
  const check = await core.calls.cached(
    `phone ${locationId}`,
    () => checkLocationPhone(core.phones, locationId, core.config.baseUrl, PHONE_TIMEOUT_MS),
    key,
  );
  const status = check?.status ?? "fail";
  return { gateway: "android", status, detail: PHONE_SAYS[status] };
}
