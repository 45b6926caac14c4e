import type { PhoneStore } from "../../store/contract.ts";
import type { PhoneSettings } from "../../store/types.ts";
import { GatewayError } from "../../errors.ts";
import { smsParts } from "../parts.ts";
import { deviceOf } from "../phone-key.ts";
import { createPhoneClient, phoneStatus, type PhoneClient } from "./android.ts";
import type { DeliveryStatus, GatewayDriver, SendRequest, SendResult } from "./gateway.ts";
import type { CallObserver } from "./observe.ts";

export interface AndroidDriverOptions {
  /** The locations' phones: a key names its device, and the device's settings say how to reach it. */
  phones: Pick<PhoneStore, "byDevice">;
  /** A message the phone has not sent this long after it took it expires there unsent: every send's `ttl` (ANDROID_SEND_DEADLINE). */
  sendDeadlineMs: number;
  /** How long Cast's messages wait for their receipt (DLR_WAIT): a phone's wait at least as long. */
  dlrWaitMs: number;
  /** Each phone's pace (ANDROID_MESSAGES_PER_MINUTE, ANDROID_MESSAGES_PER_HOUR). */
  messagesPerMinute: number;
  messagesPerHour: number;
  timeoutMs?: number;
  /** Told of every call to a phone, as the clients' calls are (outages, metrics). */
  observe?: CallObserver;
}

const HOUR_MS = 3_600_000;

/**
 * Phones running SMS Gateway for Android (android.ts, docs/services/android-gateway-api.md):
 * the SmsGateway driver of every location's phone, each key `android:<device id>`
 * (phone-key.ts), each call through the client of the phone's current settings.
 */
export function createAndroidDriver(options: AndroidDriverOptions): GatewayDriver {
  const clientOf = phoneClients(options);
  const device = (key: string): string => deviceOf(key) ?? key;
  return {
    kind: "android",
    // The API states no limit on a text: SMS_MAX_PARTS bounds a phone's messages.
    maxMessageLength: Number.POSITIVE_INFINITY,
    // A phone sends one message at a time, at its own pace: carriers cut off a SIM that bursts.
    budget: { perSecond: options.messagesPerMinute / 60, burst: 1, perHour: options.messagesPerHour },
    receipts: {
      source: "pushed",
      // Waited for at least until it must have left the phone (ANDROID_SEND_DEADLINE).
      waitMs: Math.max(options.dlrWaitMs, options.sendDeadlineMs),
      // A phone's message may stay `Sent` for ever: without its final state it is not taken as delivered.
      unknownWithoutReceipt: true,
    },
    // A repeated `id` on the same device is refused (409) and sends nothing, and the API
    // names no end to that (docs/services/android-gateway-api.md); but the phone's memory of
    // an id is its own message history: bridge promises no more of it than of Cast's.
    idempotencyWindowMs: 20 * HOUR_MS,
    account: { credits: false, senderIds: false, unsubscribedList: false },
    // A phone's key names its device, no secret.
    gatewayOf: (key) => key,

    async send(req: SendRequest): Promise<SendResult> {
      const ttl = options.sendDeadlineMs / 1000;
      const sent = await (await clientOf(req.apiKey, device(req.apiKey))).send(req.idempotencyKey, toE164(req.to), req.message, ttl);
      // The phone's message id is ours: the id it was sent under.
      return { messageId: sent.message.id, parts: smsParts(req.message).parts, ...(sent.replayed && { replayed: true }) };
    },
    /**
     * The message's state as a status. Past its ttl the phone itself ends one it had not sent
     * (`Failed`, "TTL expired"); one still Pending or Processed then is no proof either way
     * (the phone may be off, or sent it and could not tell): it waits out its receipt wait.
     */
    async status(key: string, id: string): Promise<DeliveryStatus> {
      return phoneStatus(await (await clientOf(key, device(key))).state(id));
    },
    async logs() {
      // A phone keeps no log to read in batches: its messages are asked for alone (receipts.ts).
      throw new GatewayError("unknown", "a phone has no log of messages: each is asked for alone");
    },
    /** How a held phone is probed: a call that needs its credentials. */
    async balance(key: string): Promise<number> {
      await (await clientOf(key, device(key))).webhooks();
      return 0;
    },
    async senderIds() {
      return [];
    },
  };
}

/** 09XXXXXXXXX (how the queue holds a Philippine mobile number) as E.164, which the phone takes. */
export function toE164(local: string): string {
  return local.startsWith("0") ? `+63${local.slice(1)}` : local;
}

/** Each phone's client, from the settings of a location it serves (one phone may serve several), made anew when they change. */
function phoneClients(options: AndroidDriverOptions) {
  const clients = new Map<string, { settings: PhoneSettings; client: PhoneClient }>();
  return async (key: string, device: string): Promise<PhoneClient> => {
    const settings = (await options.phones.byDevice(device))[0];
    if (!settings) throw new GatewayError("rejected", `no location sends through phone ${device} any more (${key})`);
    const known = clients.get(device);
    if (known && same(known.settings, settings)) return known.client;
    const client = createPhoneClient(settings, { timeoutMs: options.timeoutMs, observe: options.observe });
    clients.set(device, { settings, client });
    return client;
  };
}

function same(a: PhoneSettings, b: PhoneSettings): boolean {
  return a.url === b.url && a.user === b.user && a.password === b.password && a.deviceId === b.deviceId;
}
