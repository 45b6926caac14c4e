import type { PhoneStore } from "../../store/contract.ts";
import type { PhoneSettings } from "../../store/types.ts";
import { AppError, errorMessage } from "../../errors.ts";
import { createPhoneClient, type PhoneWebhook } from "../clients/android.ts";
import { fail, ok, warn, type Check } from "./doctor/check.ts";

/** The events bridge takes from a phone (docs/android.md), each registered under a stable id: a re-run replaces it. */
export const PHONE_EVENTS = ["sms:received", "sms:sent", "sms:delivered", "sms:failed"] as const;

/** Where a phone posts its webhooks. */
export function phoneWebhookUrl(baseUrl: string): string {
  return `${baseUrl}/webhooks/android`;
}

/**
 * `bridge android register LOCATION_ID`: registers bridge's webhook URL for each event on
 * the location's phone. The phone posts only to HTTPS (or to itself), so a BASE_URL that
 * is not is refused, saying what to do, before the phone is asked anything.
 */
export async function registerPhone(settings: PhoneSettings, baseUrl: string, timeoutMs?: number): Promise<PhoneWebhook[]> {
  const url = phoneWebhookUrl(baseUrl);
  if (!/^https:\/\//i.test(baseUrl) && !/^http:\/\/127\.0\.0\.1(:\d+)?$/.test(baseUrl)) {
    throw new AppError(
      "BAD_CONFIG",
      `BASE_URL is ${baseUrl || "(unset)"}: the phone posts its webhooks only over HTTPS; serve bridge at an https:// address ` +
        "(a reverse proxy with a certificate), set BASE_URL to it, and run `bridge android register` again",
    );
  }
  const client = createPhoneClient(settings, { timeoutMs });
  const hooks = PHONE_EVENTS.map((event) => ({ id: `bridge-${event.replace(":", "-")}`, url, event }));
  for (const hook of hooks) await client.register(hook);
  return hooks;
}

/** Doctor's checks of each phone a location sends through: it answers, it takes the login, bridge's webhooks are on it. */
export async function checkPhones(phones: PhoneStore, baseUrl: string, timeoutMs: number): Promise<Check[]> {
  const checks: Check[] = [];
  const byDevice = new Map<string, PhoneSettings[]>();
  for (const settings of await phones.android()) byDevice.set(settings.deviceId, [...(byDevice.get(settings.deviceId) ?? []), settings]);
  for (const [device, served] of byDevice) checks.push(await checkPhone(served, device, baseUrl, timeoutMs));
  return checks;
}

/**
 * The settings page's view of its location's phone: the doctor's check of it alone (never
 * naming the other locations a shared phone serves); undefined when it sends through Cast.
 */
export async function checkLocationPhone(phones: PhoneStore, locationId: string, baseUrl: string, timeoutMs: number): Promise<Check | undefined> {
  const settings = await phones.get(locationId);
  if (settings.gateway !== "android" || !settings.url || !settings.deviceId) return undefined;
  return checkPhone([settings], settings.deviceId, baseUrl, timeoutMs);
}

async function checkPhone(served: PhoneSettings[], device: string, baseUrl: string, timeoutMs: number): Promise<Check> {
  const name = `phone ${device} (${served.map((s) => s.locationId).join(", ")})`;
  const client = createPhoneClient(served[0]!, { timeoutMs });
  try {
    const health = await client.health();
    const hooks = await client.webhooks();
    const url = phoneWebhookUrl(baseUrl);
    const missing = PHONE_EVENTS.filter((event) => !hooks.some((h) => h.event === event && h.url === url));
    const said = `answers at ${served[0]!.url} (health ${health || "not said"})`;
    if (missing.length > 0) {
      return warn(name, `${said}, but ${url} is not registered for ${missing.join(", ")}: run \`bridge android register ${served[0]!.locationId}\``);
    }
    const keyless = served.filter((s) => !s.signingKey).map((s) => s.locationId);
    if (keyless.length > 0) {
      return warn(name, `${said}, but ${keyless.join(", ")} has no signing key, so its webhooks are refused: \`bridge config set ${keyless[0]} --android-signing-key -\``);
    }
    if (health === "fail") return warn(name, `${said}: the app reports a problem; look at the phone`);
    return ok(name, `${said}, webhooks registered`);
  } catch (error) {
    return fail(name, `${errorMessage(error)}; check the phone is on, the app running, and the location's android settings`);
  }
}

/** The phone a location sends through; a clear error when it has none. */
export async function phoneOf(phones: PhoneStore, locationId: string): Promise<PhoneSettings> {
  const settings = await phones.get(locationId);
  if (settings.gateway !== "android" || !settings.url || !settings.deviceId) {
    throw new AppError("BAD_CONFIG", `location ${locationId} does not send through a phone: \`bridge config set ${locationId} --gateway android --android-url …\` first`);
  }
  return settings;
}
