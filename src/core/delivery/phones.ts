import type { PhoneJobs } from "../../db/phone-jobs.ts";
import type { PhoneSettings, PhoneStore } from "../../db/phones.ts";
import { GatewayError } from "../../errors.ts";
import {
  createPhoneClient,
  notSentYet,
  PHONE_NOT_SENT,
  phoneStatus,
  type PhoneClient,
} from "../clients/android.ts";
import type { DeliveryStatus, SendRequest, SendResult, SmsGateway } from "../clients/gateway.ts";
import type { Logger } from "../log.ts";
import { smsParts } from "./parts.ts";

/**
 * A location whose gateway is "android" sends through its phone. To the queue a phone is
 * a key like Cast's: `android:<device id>`. The send's claim, the holds, the receipt
 * looks and the scheduler's per-key budget (ANDROID_MESSAGES_PER_MINUTE for a phone) then
 * work for it unchanged, and `createGateways` routes each call by its key.
 */
const PREFIX = "android:";

export function phoneKey(deviceId: string): string {
  return `${PREFIX}${deviceId}`;
}

/** The device a phone's key names; undefined for Cast's keys. */
export function deviceOf(key: string): string | undefined {
  return key.startsWith(PREFIX) ? key.slice(PREFIX.length) : undefined;
}

export interface GatewaysOptions {
  cast: SmsGateway;
  phones: Pick<PhoneStore, "describe" | "byDevice">;
  /** The job table as a phone names its messages. */
  phoneJobs: Pick<PhoneJobs, "sentAs">;
  /** A message the phone still has not sent this long after its first attempt is cancelled (ANDROID_SEND_DEADLINE). */
  sendDeadlineMs: number;
  now: () => number;
  log: Logger;
  timeoutMs?: number;
}

export type Gateways = ReturnType<typeof createGateways>;

/** One SmsGateway over Cast and every location's phone, routed by key; and which key a location sends with. */
export function createGateways(options: GatewaysOptions) {
  const { cast, phones } = options;
  const phone = phoneCalls(options);
  const gateway: SmsGateway = {
    // SMS_MAX_PARTS keeps a phone's messages far shorter than Cast's limit.
    maxMessageLength: cast.maxMessageLength,
    send(req) {
      const device = deviceOf(req.apiKey);
      return device === undefined ? cast.send(req) : phone.send(device, req);
    },
    status(key, id) {
      const device = deviceOf(key);
      return device === undefined ? cast.status(key, id) : phone.status(device, key, id);
    },
    async logs(key, page) {
      if (deviceOf(key) === undefined) return cast.logs(key, page);
      // A phone keeps no log to read in batches: its messages are asked for alone (receipts.ts).
      throw new GatewayError("unknown", "a phone has no log of messages: each is asked for alone");
    },
    balance(key) {
      const device = deviceOf(key);
      return device === undefined ? cast.balance(key) : phone.probe(device, key);
    },
    async senderIds(key) {
      return deviceOf(key) === undefined ? cast.senderIds(key) : [];
    },
  };

  return {
    gateway,
    /** The key a location's messages go with when it sends through a phone; undefined: through Cast. */
    phoneFor(locationId: string): string | undefined {
      // Read at every send, so a change applies at once; its secrets are not opened for it.
      const settings = phones.describe(locationId);
      return settings?.gateway === "android" && settings.deviceId ? phoneKey(settings.deviceId) : undefined;
    },
  };
}

/** The gateway's calls for a phone's key: each through the client of the phone's current settings. */
function phoneCalls(options: GatewaysOptions) {
  const clients = new Map<string, { settings: PhoneSettings; client: PhoneClient }>();

  /** The phone's client, from the settings of a location it serves (one phone may serve several). */
  function clientOf(key: string, device: string): PhoneClient {
    const settings = options.phones.byDevice(device)[0];
    if (!settings) throw new GatewayError("rejected", `no location sends through phone ${device} any more (${key})`);
    const known = clients.get(device);
    if (known && same(known.settings, settings)) return known.client;
    const client = createPhoneClient(settings, { timeoutMs: options.timeoutMs });
    clients.set(device, { settings, client });
    return client;
  }

  return {
    async send(device: string, req: SendRequest): Promise<SendResult> {
      const sent = await clientOf(req.apiKey, device).send(req.idempotencyKey, toE164(req.to), req.message);
      // The phone's message id is ours: the id it was sent under.
      return { messageId: sent.message.id, parts: smsParts(req.message).parts, ...(sent.replayed && { replayed: true }) };
    },
    async status(device: string, key: string, id: string): Promise<DeliveryStatus> {
      const client = clientOf(key, device);
      const message = await client.state(id);
      const sentAt = notSentYet(message.state) ? options.phoneJobs.sentAs(id)?.firstSentAt : null;
      if (sentAt == null || options.now() - sentAt < options.sendDeadlineMs) return phoneStatus(message);
      return giveUp(options, client, id, message.state);
    },
    /** How a held phone is probed: a call that needs its credentials. */
    async probe(device: string, key: string): Promise<number> {
      await clientOf(key, device).webhooks();
      return 0;
    },
  };
}

/**
 * Past ANDROID_SEND_DEADLINE and still unsent (the phone off, the app killed): cancelled,
 * so that it does not go out hours later, and failed. One the phone would not cancel is
 * read once more: it may have just gone.
 */
async function giveUp(options: GatewaysOptions, client: PhoneClient, id: string, state: string): Promise<DeliveryStatus> {
  const cancelled = await client.cancel(id).catch(() => false);
  if (!cancelled) {
    const again = await client.state(id).catch(() => undefined);
    if (again && !notSentYet(again.state)) return phoneStatus(again);
  }
  const deadline = options.sendDeadlineMs;
  const took = deadline >= 60_000 ? `${Math.round(deadline / 60_000)} min` : `${Math.round(deadline / 1000)} s`;
  const said = `still ${state} after ANDROID_SEND_DEADLINE (${took}); ${cancelled ? "cancelled" : "it could not be cancelled"}`;
  options.log.warn(`phone message ${id}: the phone did not send it: ${said}`);
  return { status: "failed", dlrStatus: PHONE_NOT_SENT, errorMessage: said };
}

/** 09XXXXXXXXX (how the queue holds a Philippine mobile number) as E.164, which the phone takes. */
export function toE164(local: string): string {
  return local.startsWith("0") ? `+63${local.slice(1)}` : local;
}

function same(a: PhoneSettings, b: PhoneSettings): boolean {
  return a.url === b.url && a.user === b.user && a.password === b.password && a.deviceId === b.deviceId;
}
