import type { PhoneStore } from "../../store/contract.ts";
import type { PhoneSettings } from "../../store/types.ts";
import { GatewayError } from "../../errors.ts";
import { createPhoneClient, phoneStatus, type PhoneClient } from "../clients/android.ts";
import type { CallObserver } from "../clients/observe.ts";
import type { DeliveryStatus, SendRequest, SendResult, SmsGateway } from "../clients/gateway.ts";
import { smsParts } from "../parts.ts";
import { deviceOf, phoneKey } from "../phone-key.ts";

// A phone is a key like Cast's, `android:<device id>` (phone-key.ts): every call here is routed by it.

export interface GatewaysOptions {
  cast: SmsGateway;
  phones: Pick<PhoneStore, "describe" | "byDevice">;
  /** A message the phone has not sent this long after it took it expires there unsent: every send's `ttl` (ANDROID_SEND_DEADLINE). */
  sendDeadlineMs: number;
  timeoutMs?: number;
  /** Told of every call to a phone, as the clients' calls are (outages, metrics). */
  observe?: CallObserver;
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
    async phoneFor(locationId: string): Promise<string | undefined> {
      // Read at every send, so a change applies at once; its secrets are not opened for it.
      const settings = await phones.describe(locationId);
      return settings?.gateway === "android" && settings.deviceId ? phoneKey(settings.deviceId) : undefined;
    },
  };
}

/** The gateway's calls for a phone's key: each through the client of the phone's current settings. */
function phoneCalls(options: GatewaysOptions) {
  const clients = new Map<string, { settings: PhoneSettings; client: PhoneClient }>();

  /** The phone's client, from the settings of a location it serves (one phone may serve several). */
  async function clientOf(key: string, device: string): Promise<PhoneClient> {
    const settings = (await options.phones.byDevice(device))[0];
    if (!settings) throw new GatewayError("rejected", `no location sends through phone ${device} any more (${key})`);
    const known = clients.get(device);
    if (known && same(known.settings, settings)) return known.client;
    const client = createPhoneClient(settings, { timeoutMs: options.timeoutMs, observe: options.observe });
    clients.set(device, { settings, client });
    return client;
  }

  return {
    async send(device: string, req: SendRequest): Promise<SendResult> {
      const ttl = options.sendDeadlineMs / 1000;
      const sent = await (await clientOf(req.apiKey, device)).send(req.idempotencyKey, toE164(req.to), req.message, ttl);
      // The phone's message id is ours: the id it was sent under.
      return { messageId: sent.message.id, parts: smsParts(req.message).parts, ...(sent.replayed && { replayed: true }) };
    },
    /**
     * The message's state as a status. Past its ttl the phone itself ends one it had not sent
     * (`Failed`, "TTL expired"); one still Pending or Processed then is no proof either way
     * (the phone may be off, or sent it and could not tell): it waits out its receipt wait.
     */
    async status(device: string, key: string, id: string): Promise<DeliveryStatus> {
      return phoneStatus(await (await clientOf(key, device)).state(id));
    },
    /** How a held phone is probed: a call that needs its credentials. */
    async probe(device: string, key: string): Promise<number> {
      await (await clientOf(key, device)).webhooks();
      return 0;
    },
  };
}

/** 09XXXXXXXXX (how the queue holds a Philippine mobile number) as E.164, which the phone takes. */
export function toE164(local: string): string {
  return local.startsWith("0") ? `+63${local.slice(1)}` : local;
}

function same(a: PhoneSettings, b: PhoneSettings): boolean {
  return a.url === b.url && a.user === b.user && a.password === b.password && a.deviceId === b.deviceId;
}
