import { GatewayError } from "../../errors.ts";
import { neverSent } from "../retry.ts";
import { UNSENT, type DeliveryStatus } from "./gateway.ts";
import { callFailure, hostOf } from "./network.ts";
import { observed, type CallObserver } from "./observe.ts";
import { callRemote } from "./transport.ts";

/**
 * SMS Gateway for Android (docs/services/android-gateway-api.md): a phone with a SIM that sends and
 * receives through its own HTTP API, on the phone itself (`http://<ip>:8080`, local mode)
 * or through the app's cloud (`…/3rdparty/v1`, the same paths).
 */
export interface PhoneAccess {
  url: string;
  user: string;
  password: string;
  /** Pinned on every send: the message id is unique per device, so a retry must go to the same one. */
  deviceId: string;
}

/** A message's state on the phone: Pending, Processed, Sent, Delivered or Failed. */
export interface PhoneMessage {
  id: string;
  state: string;
  /** Why it failed, as the phone says (a recipient's `error`); "" when it did not say. */
  reason: string;
}

/** A webhook registered on the phone (`GET /webhooks`). */
export interface PhoneWebhook {
  id: string;
  url: string;
  event: string;
  deviceId?: string;
}

export interface PhoneClientOptions {
  timeoutMs?: number;
  /** Told of every call to the phone (outages: a phone that stops answering is one). */
  observe?: CallObserver;
}

export type PhoneClient = ReturnType<typeof createPhoneClient>;

/** One phone's API. Every method throws GatewayError, classified by `phoneFailure`. */
export function createPhoneClient(phone: PhoneAccess, options: PhoneClientOptions = {}) {
  const request = phoneRequest(phone, options.timeoutMs ?? 30_000, options.observe);

  async function state(id: string): Promise<PhoneMessage> {
    const res = await request("state", "GET", `/messages/${encodeURIComponent(id)}`);
    const read = res.status === 200 ? readMessage(res.body) : undefined;
    if (!read) throw phoneFailure(res.status, res.text, "state call");
    return read;
  }

  return {
    deviceId: phone.deviceId,

    /**
     * Sends one SMS under `id` (the job's idempotency key, at most 36 characters) from the
     * pinned device, to expire on the phone unsent after `ttlSeconds` (the API has no cancel
     * call: the ttl is the only way to stop a message that has not left). A 409 says the
     * phone took that id before: its state is read back, and nothing is sent again.
     */
    async send(id: string, to: string, text: string, ttlSeconds: number): Promise<{ message: PhoneMessage; replayed: boolean }> {
      const ttl = Math.max(1, Math.floor(ttlSeconds));
      const body = { id, deviceId: phone.deviceId, phoneNumbers: [to], textMessage: { text }, ttl, withDeliveryReport: true };
      const res = await request("send", "POST", "/messages", body);
      if (res.status === 409) return { message: await state(id), replayed: true };
      const message = res.status === 202 || res.status === 200 ? readMessage(res.body) : undefined;
      if (!message) throw phoneFailure(res.status, res.text, "send");
      return { message, replayed: false };
    },

    /** The message's state (`GET /messages/{id}`); one the phone has no record of throws "not_found". */
    state,

    ...operatorCalls(request, phone.deviceId),
  };
}

type PhoneRequest = (what: string, method: string, path: string, body?: unknown) => Promise<{ status: number; body: unknown; text: string }>;

/** The one place that talks HTTP to the phone: base URL, Basic auth, timeout; any status is an answer. */
function phoneRequest(phone: PhoneAccess, timeout: number, observe?: CallObserver): PhoneRequest {
  const host = hostOf(phone.url);
  const watched = (operation: string) => ({ remote: `phone:${phone.deviceId}` as const, operation, host, timeoutMs: timeout, observe });
  const authorization = `Basic ${Buffer.from(`${phone.user}:${phone.password}`).toString("base64")}`;
  return async (what, method, path, body) => {
    let res;
    try {
      res = await observed(watched(what), () =>
        callRemote(path, {
          baseURL: phone.url,
          method,
          headers: { Authorization: authorization, Accept: "application/json", ...(body !== undefined && { "Content-Type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          timeout,
        }),
      );
    } catch (error) {
      // Named by its device, not its address: this text is the message's reason, which the
      // settings page shows its tenant, and the address is the operator's network (the
      // operator's log names it: the outage line comes from the observer, above).
      const failed = callFailure(error, host, timeout);
      failed.message = failed.message.replaceAll(host, `phone ${phone.deviceId}`).replaceAll(new URL(phone.url).hostname, "the phone");
      // A send that may have reached the phone is "unknown": only the same id may go again (a 409 then says it was taken).
      if (neverSent(error)) throw new GatewayError("unreachable", `phone unreachable (${what}): ${failed.message}`, { cause: error });
      throw new GatewayError("unknown", `phone did not answer (${what}): ${failed.message}; it may have taken the message`, { cause: error });
    }
    const text = res._data ?? "";
    return { status: res.status, body: parseJson(text), text };
  };
}

/** What doctor and `bridge android register` ask of a phone. */
function operatorCalls(request: PhoneRequest, deviceId: string) {
  return {
    /** `GET /health`: the app's own word on itself ("pass", "warn", "fail"; "" when it gave none). */
    async health(): Promise<string> {
      const res = await request("health", "GET", "/health");
      if (res.status >= 300 && res.status !== 503) throw phoneFailure(res.status, res.text, "health call");
      const status = (res.body as { status?: unknown } | undefined)?.status;
      return typeof status === "string" ? status : res.status === 503 ? "fail" : "";
    },

    /** The webhooks registered on the phone. Needs the credentials, so it also proves them. */
    async webhooks(): Promise<PhoneWebhook[]> {
      const res = await request("webhooks", "GET", "/webhooks");
      if (res.status !== 200 || !Array.isArray(res.body)) throw phoneFailure(res.status, res.text, "webhooks call");
      return (res.body as Record<string, unknown>[]).filter(isWebhook);
    },

    /** Registers (or, under the same id, replaces) a webhook. */
    async register(hook: PhoneWebhook): Promise<void> {
      const res = await request("register", "POST", "/webhooks", { ...hook, deviceId });
      if (res.status < 200 || res.status >= 300) throw phoneFailure(res.status, res.text, "webhook registration");
    },
  };
}

/**
 * The phone's answer as a GatewayError, decided in one place: 400 the message refused;
 * 401/403 the credentials refused; 503 its queue is full (nothing taken, the same id may
 * go again); a 5xx or anything else unclear. The policy (hold, retry, fail) reads only
 * this, never the status.
 */
export function phoneFailure(status: number, text: string, what: string): GatewayError {
  const said = readError(text);
  const message = `phone refused the ${what} (${status})${said ? `: ${said}` : ""}`;
  if (status === 401 || status === 403) {
    return new GatewayError("key_refused", `${message}; check the location's android user and password`, { httpStatus: status });
  }
  if (status === 404 && what === "state call") return new GatewayError("not_found", message, { httpStatus: status });
  if (status === 429) return new GatewayError("rate_limited", message, { httpStatus: status });
  if (status === 503 || status >= 500) return new GatewayError("unknown", `${message}; will try again with the same id`, { httpStatus: status });
  if (status >= 400) return new GatewayError("rejected", message, { httpStatus: status });
  return new GatewayError("unknown", `phone answered the ${what} with ${status}, not as documented`, { httpStatus: status });
}

/**
 * A phone state in the terms bridge reports by (gateway.ts, Cast's): Pending and Processed
 * have not left the phone; Sent is the carrier's, not yet the recipient's (never
 * "delivered"); Delivered is; Failed is, with the phone's reason. Two Faileds prove nothing
 * left: the ttl passed first ("TTL expired": failed, the phone did not send it), and the
 * send limit (RESULT_ERROR_LIMIT_EXCEEDED: "unsent", to go again later, never failed).
 */
export function phoneStatus(message: PhoneMessage): DeliveryStatus {
  switch (message.state) {
    case "Delivered":
      return { status: "delivered", dlrStatus: "DELIVRD", errorMessage: "" };
    case "Failed":
      if (message.reason.includes(LIMIT_EXCEEDED)) return { status: UNSENT, dlrStatus: "", errorMessage: message.reason };
      return { status: "failed", dlrStatus: expired(message.reason) ? PHONE_NOT_SENT : PHONE_FAILED, errorMessage: message.reason };
    case "Sent":
      return { status: "sent", dlrStatus: "", errorMessage: "" };
    default:
      return { status: "pending", dlrStatus: "", errorMessage: "" };
  }
}

/** The receipt code of a message the phone failed (its own reason follows in the text). */
export const PHONE_FAILED = "PHONE_FAILED";
/** The receipt code of a message the phone proves it never sent: its ttl passed first. */
export const PHONE_NOT_SENT = "PHONE_NOT_SENT";

/**
 * Android's (or the carrier's) send limit: the phone's `Failed` with this reason on a
 * recipient (fixtures/android/sms-failed.json's `reason`; the app writes it as
 * "Send result: RESULT_ERROR_LIMIT_EXCEEDED (…)"). Nothing was sent.
 */
export const LIMIT_EXCEEDED = "RESULT_ERROR_LIMIT_EXCEEDED";

/** The app's reason for a message whose ttl passed before it was sent (it is then never sent). */
function expired(reason: string): boolean {
  return /\bTTL expired\b/i.test(reason);
}

/** A state as the phone writes it (fixtures/android/send-202.json; client-ts's MessageState). */
function readMessage(body: unknown): PhoneMessage | undefined {
  const b = body as { id?: unknown; state?: unknown; recipients?: unknown } | undefined;
  if (typeof b?.id !== "string" || typeof b.state !== "string") return undefined;
  const recipients = Array.isArray(b.recipients) ? (b.recipients as { error?: unknown }[]) : [];
  const reason = recipients.map((r) => (typeof r?.error === "string" ? r.error : "")).find(Boolean) ?? "";
  return { id: b.id, state: b.state, reason };
}

function isWebhook(hook: Record<string, unknown>): hook is Record<string, unknown> & PhoneWebhook {
  return typeof hook?.id === "string" && typeof hook.url === "string" && typeof hook.event === "string";
}

/** The phone's errors are `{"message": "..."}`. */
function readError(text: string): string {
  const body = parseJson(text) as { message?: unknown } | undefined;
  return typeof body?.message === "string" ? body.message.slice(0, 200) : text.slice(0, 200);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
