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
}

/**
 * A fake phone running SMS Gateway for Android (docs/services/android-gateway-api.md), local mode: Basic
 * auth, `POST /messages` answered 202 in send-202.json's shape, a reused id on a device
 * answered 409 and sent nothing, `GET|DELETE /messages/{id}`, `/health`, `/webhooks`.
 * Messages stay as they are until the test moves them (`advance`), as a phone left off
 * would keep them Pending. It can post webhooks, signed as the app signs, to any URL.
 */
export async function startFakePhone() {
  const phone: PhoneState = {
    messages: new Map(),
    webhooks: new Map(),
    health: { status: 200, body: { status: "pass", version: "1.68.0", releaseId: 1, checks: {} } },
  };
  const { messages, webhooks } = phone;
  const fake = await startFake({
    "POST /messages": (req) => authorized(req) ?? send(phone, req),
    "GET /messages/:id": (req) => authorized(req) ?? shown(phone, req),
    "DELETE /messages/:id": (req) => authorized(req) ?? cancel(phone, req),
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
    /** DELETE /messages/{id} fails from now on. */
    refuseCancel() {
      phone.refuseCancel = true;
    },
    setHealth(status: number, body: Record<string, unknown>) {
      phone.health = { status, body };
    },
    /** A webhook envelope in the fixtures' shape, for `event` with `payload` over the fixture's. */
    envelope(event: "sms:received" | "sms:sent" | "sms:delivered" | "sms:failed", payload: Record<string, unknown> = {}): Envelope {
      const base = event === "sms:received" ? ANDROID.received : event === "sms:failed" ? ANDROID.failed : ANDROID.delivered;
      return { ...base, event, id: randomUUID().slice(0, 21), payload: { ...base.payload, ...payload } };
    },
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
  /** DELETE answers 500 and cancels nothing (a phone that cannot be reached through its cloud, say). */
  refuseCancel?: boolean;
}

function authorized(req: Recorded): Response | undefined {
  const expected = `Basic ${Buffer.from(`${PHONE_USER}:${PHONE_PASSWORD}`).toString("base64")}`;
  return req.headers.authorization === expected ? undefined : jsonResponse({ message: "Unauthorized" }, 401);
}

function send(phone: PhoneState, req: Recorded): Response {
  const body = JSON.parse(req.body) as { id?: string; deviceId?: string; phoneNumbers: string[]; textMessage: { text: string } };
  const answer = phone.nextSend;
  phone.nextSend = undefined;
  if (answer && !answer.taken) return jsonResponse({ message: `answered ${answer.status} as the test asked` }, answer.status);
  const deviceId = body.deviceId ?? DEVICE;
  const id = body.id ?? randomUUID();
  if (id.length > 36) return jsonResponse({ message: "id must be at most 36 characters" }, 400);
  // The id is unique per device: a reuse is refused and nothing is sent (the 409 carries no state).
  if (phone.messages.has(`${deviceId}:${id}`)) return jsonResponse({ message: `message with id ${id} already exists` }, 409);
  const held: Held = { id, deviceId, to: body.phoneNumbers[0] ?? "", text: body.textMessage.text, state: "Pending", reason: "" };
  phone.messages.set(`${deviceId}:${id}`, held);
  // Taken, but the answer is lost on its way (a timeout, a proxy's 5xx).
  if (answer) return jsonResponse({ message: `answered ${answer.status} as the test asked` }, answer.status);
  return jsonResponse(stateOf(held), 202, { location: `/messages/${id}` });
}

function find(phone: PhoneState, req: Recorded): Held | undefined {
  const id = decodeURIComponent(req.path.split("/").pop() ?? "");
  return [...phone.messages.values()].find((m) => m.id === id);
}

function shown(phone: PhoneState, req: Recorded): Response {
  const held = find(phone, req);
  return held ? jsonResponse(stateOf(held)) : jsonResponse({ message: "message not found" }, 404);
}

function cancel(phone: PhoneState, req: Recorded): Response {
  const held = find(phone, req);
  if (!held) return jsonResponse({ message: "message not found" }, 404);
  if (phone.refuseCancel) return jsonResponse({ message: "internal server error" }, 500);
  if (held.state !== "Pending" && held.state !== "Processed") return jsonResponse({ message: "message already sent" }, 409);
  Object.assign(held, { state: "Failed", reason: "cancelled" });
  return new Response(null, { status: 204 });
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
