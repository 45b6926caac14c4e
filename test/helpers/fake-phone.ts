import { createHmac, randomUUID } from "node:crypto";
import { fixture } from "./fixtures.ts";
import { jsonResponse, startFake, type Recorded } from "./http.ts";

export const PHONE_USER = "sms";
export const PHONE_PASSWORD = "phone-pw-0123";
export const DEVICE = "ffffffffceb0b1db0000018e937c815b";
export const SIGNING_KEY = "phone-signing-key-0123";

/** The app's documented bodies (../shared/fixtures/android): every answer and webhook takes their shapes. */
export const ANDROID = {
  send: fixture("android", "send-202.json"),
  received: fixture<Envelope>("android", "sms-received.json"),
  delivered: fixture<Envelope>("android", "sms-delivered.json"),
  failed: fixture<Envelope>("android", "sms-failed.json"),
};

export interface Envelope {
  deviceId: string;
  event: string;
  id: string;
  payload: Record<string, unknown>;
  webhookId: string;
}

/** A message as the phone holds it. */
interface Held {
  id: string;
  deviceId: string;
  to: string;
  text: string;
  state: "Pending" | "Processed" | "Sent" | "Delivered" | "Failed";
  reason: string;
  /** When the phone took it. */
  takenAt: number;
  /** When the phone drops it unsent (the send's `ttl`); undefined: never. */
  validUntil?: number;
  /** The SMS parts its text goes in (Android's divideMessage: GSM 160/153, else 70/67). */
  parts: number;
}

/** The app's reason for a message whose ttl passed before it was sent (MessagesService.kt, `sendMessage`). */
export const TTL_EXPIRED = "TTL expired";
/** The send limit's reason, as fixtures/android/sms-failed.json carries it. */
export const LIMIT_EXCEEDED = ANDROID.failed.payload.reason as string;

/**
 * A fake phone running SMS Gateway for Android (docs/services/android-gateway-api.md), local mode: Basic
 * auth, `POST /messages` answered 202 in send-202.json's shape, a reused id on a device
 * answered 409 and sent nothing, `GET /messages/{id}`, `/health`, `/webhooks`; no cancel
 * call (a `DELETE` finds no route: 404). Messages stay as they are until the test moves
 * them (`advance`), except that a Pending one past its `ttl` ends `Failed`, "TTL expired",
 * as the app ends it, unless the phone is `asleep` (off: it then keeps it as it is). Past
 * its send limit (`limit`) a message ends `Failed` with RESULT_ERROR_LIMIT_EXCEEDED. It can
 * post webhooks, signed as the app signs, to any URL; `events` gives one per part.
 */
export async function startFakePhone(options: { now?: () => number } = {}) {
  const phone: PhoneState = {
    messages: new Map(),
    webhooks: new Map(),
    health: { status: 200, body: { status: "pass", version: "1.68.0", releaseId: 1, checks: {} } },
    now: options.now ?? Date.now,
  };
  const { messages, webhooks } = phone;
  const fake = await startFake({
    "POST /messages": (req) => authorized(req) ?? send(phone, req),
    "GET /messages/:id": (req) => authorized(req) ?? shown(phone, req),
    "GET /health": () => jsonResponse(phone.health.body, phone.health.status),
    "GET /webhooks": (req) => authorized(req) ?? jsonResponse([...webhooks.values()]),
    "POST /webhooks": (req) => authorized(req) ?? register(phone, req),
    "ALL /**": () => jsonResponse({ message: "Not Found" }, 404),
  });

  return {
    ...fake,
    messages,
    webhooks,
    /** Moves a message on, as the phone and the carrier would. */
    advance(id: string, state: Held["state"], reason = "") {
      const held = [...messages.values()].find((m) => m.id === id);
      if (!held) throw new Error(`fake phone holds no message ${id}`);
      Object.assign(held, { state, reason });
    },
    /** The next send is answered `status` (with the app's `{message}` error body); `taken`: the phone keeps the message all the same. */
    answerNextSend(status: number, taken = false) {
      phone.nextSend = { status, taken };
    },
    /** Off (cloud mode, the phone away): its messages stay as they are, past their ttl too, until it is back (`false`). */
    asleep(off = true) {
      phone.asleep = off;
    },
    /** Android's send limit: after `sends` more messages, each further one ends Failed, RESULT_ERROR_LIMIT_EXCEEDED. */
    limit(sends: number) {
      phone.limit = { left: sends };
    },
    /**
     * The webhooks the phone posts for the message's state now: sms:sent, sms:delivered or
     * sms:failed, once per part (the docs: "`sms:delivered` (once per part)"; the app reports
     * each part's result alike), in the fixtures' shapes.
     */
    events(id: string): Envelope[] {
      const held = [...messages.values()].find((m) => m.id === id);
      const event = held && EVENTS[held.state];
      if (!held || !event) return [];
      const payload = { messageId: held.id, phoneNumber: held.to, ...(held.state === "Failed" && { reason: held.reason }) };
      return Array.from({ length: held.parts }, () => ({ ...envelope(event, payload), deviceId: held.deviceId }));
    },
    setHealth(status: number, body: Record<string, unknown>) {
      phone.health = { status, body };
    },
    /** A webhook envelope in the fixtures' shape, for `event` with `payload` over the fixture's. */
    envelope,
    /**
     * Posts `envelope` to `url` as the app does: `X-Signature` = hex HMAC-SHA256 of the raw
     * body followed by `X-Timestamp`, with the signing key. `sign` overrides: no signature,
     * another key, another time.
     */
    async post(url: string, envelope: Envelope, sign: { key?: string | null; timestamp?: number } = {}) {
      const raw = JSON.stringify(envelope);
      const timestamp = String(sign.timestamp ?? Math.floor(Date.now() / 1000));
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (sign.key !== null) {
        headers["x-timestamp"] = timestamp;
        headers["x-signature"] = createHmac("sha256", sign.key ?? SIGNING_KEY).update(raw + timestamp).digest("hex");
      }
      const res = await fetch(url, { method: "POST", headers, body: raw });
      return { status: res.status, body: await res.text() };
    },
  };
}

export type FakePhone = Awaited<ReturnType<typeof startFakePhone>>;

/** What the phone holds. */
interface PhoneState {
  messages: Map<string, Held>;
  webhooks: Map<string, { id: string; url: string; event: string; deviceId: string }>;
  health: { status: number; body: Record<string, unknown> };
  /** The next send is answered with this status instead, once (400, 401, 503, …); `taken`: the phone took it all the same. */
  nextSend?: { status: number; taken: boolean };
  now: () => number;
  /** Off: nothing it holds moves, not even past its ttl. */
  asleep?: boolean;
  /** Sends left before Android's send limit. */
  limit?: { left: number };
}

type PhoneEvent = "sms:received" | "sms:sent" | "sms:delivered" | "sms:failed";

/** The event each state's change is posted as. */
const EVENTS: Partial<Record<Held["state"], PhoneEvent>> = { Sent: "sms:sent", Delivered: "sms:delivered", Failed: "sms:failed" };

function envelope(event: PhoneEvent, payload: Record<string, unknown> = {}): Envelope {
  const base = event === "sms:received" ? ANDROID.received : event === "sms:failed" ? ANDROID.failed : ANDROID.delivered;
  return { ...base, event, id: randomUUID().slice(0, 21), payload: { ...base.payload, ...payload } };
}

function authorized(req: Recorded): Response | undefined {
  const expected = `Basic ${Buffer.from(`${PHONE_USER}:${PHONE_PASSWORD}`).toString("base64")}`;
  return req.headers.authorization === expected ? undefined : jsonResponse({ message: "Unauthorized" }, 401);
}

function send(phone: PhoneState, req: Recorded): Response {
  const body = JSON.parse(req.body) as { id?: string; deviceId?: string; phoneNumbers: string[]; textMessage: { text: string }; ttl?: number };
  const answer = phone.nextSend;
  phone.nextSend = undefined;
  if (answer && !answer.taken) return jsonResponse({ message: `answered ${answer.status} as the test asked` }, answer.status);
  const deviceId = body.deviceId ?? DEVICE;
  const id = body.id ?? randomUUID();
  if (id.length > 36) return jsonResponse({ message: "id must be at most 36 characters" }, 400);
  // The id is unique per device: a reuse is refused and nothing is sent (the 409 carries no state).
  if (phone.messages.has(`${deviceId}:${id}`)) return jsonResponse({ message: `message with id ${id} already exists` }, 409);
  const text = body.textMessage.text;
  const validUntil = body.ttl === undefined ? undefined : phone.now() + body.ttl * 1000;
  const held: Held = { id, deviceId, to: body.phoneNumbers[0] ?? "", text, state: "Pending", reason: "", takenAt: phone.now(), validUntil, parts: partsOf(text) };
  phone.messages.set(`${deviceId}:${id}`, held);
  // Taken, but the answer is lost on its way (a timeout, a proxy's 5xx).
  if (answer) return jsonResponse({ message: `answered ${answer.status} as the test asked` }, answer.status);
  const taken = jsonResponse(stateOf(held), 202, { location: `/messages/${id}` });
  // Taken Pending; Android refuses it when the app hands it over, past the send limit.
  if (phone.limit && phone.limit.left-- <= 0) Object.assign(held, { state: "Failed", reason: LIMIT_EXCEEDED });
  return taken;
}

function find(phone: PhoneState, req: Recorded): Held | undefined {
  const id = decodeURIComponent(req.path.split("/").pop() ?? "");
  const held = [...phone.messages.values()].find((m) => m.id === id);
  // The app checks `validUntil` before it sends a Pending message: past it, never sent.
  if (held?.state === "Pending" && !phone.asleep && held.validUntil !== undefined && phone.now() > held.validUntil) {
    Object.assign(held, { state: "Failed", reason: TTL_EXPIRED });
  }
  return held;
}

function shown(phone: PhoneState, req: Recorded): Response {
  const held = find(phone, req);
  return held ? jsonResponse(stateOf(held)) : jsonResponse({ message: "message not found" }, 404);
}

function register(phone: PhoneState, req: Recorded): Response {
  const body = JSON.parse(req.body) as { id?: string; url: string; event: string; deviceId?: string };
  const hook = { id: body.id ?? randomUUID(), url: body.url, event: body.event, deviceId: body.deviceId ?? DEVICE };
  phone.webhooks.set(hook.id, hook);
  return jsonResponse(hook, 201);
}

/** A message's state in send-202.json's shape: its fields, in its order. */
function stateOf(held: Held): Record<string, unknown> {
  const recipient = { phoneNumber: held.to, state: held.state, ...(held.reason && { error: held.reason }) };
  return { ...ANDROID.send, id: held.id, deviceId: held.deviceId, state: held.state, recipients: [recipient], states: {} };
}

/** Android's divideMessage, roughly: GSM-7 text in 160 characters or parts of 153, anything else in 70 or parts of 67. */
function partsOf(text: string): number {
  const [one, many] = /^[\x20-\x7e\n\r]*$/.test(text) ? [160, 153] : [70, 67];
  return text.length <= one ? 1 : Math.ceil(text.length / many);
}
