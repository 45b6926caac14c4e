import type { JobStore } from "../../store/contract.ts";
import type { PhoneJobs } from "../../store/contract.ts";
import type { PhoneJob } from "../../store/types.ts";
import type { PhoneStore } from "../../store/contract.ts";
import { phoneStatus } from "../clients/android.ts";
import { keyTag } from "../key-tag.ts";
import { phoneKey } from "../phone-key.ts";
import type { Logger } from "../log.ts";
import type { SettleReceipt } from "../pushed-receipt.ts";
import { printable } from "../printable.ts";
import { checkPhoneSignature } from "./phone-signature.ts";
import type { InboundReply, InboundSink } from "./reply.ts";

export interface PhoneWebhookDeps {
  phones: Pick<PhoneStore, "byDevice">;
  phoneJobs: Pick<PhoneJobs, "sentAs">;
  jobs: Pick<JobStore, "sentByPhone">;
  /** Delivery settles the receipt a status event brings (src/core/delivery/receipt-settle.ts). */
  settleReceipt: SettleReceipt;
  /** Where received texts go; absent: inbound is not configured, and the phone is told to try again later. */
  sink?: InboundSink;
  log: Logger;
  now: () => number;
}

/** How bridge answers the phone: a 2xx ends its retries, anything else makes it try again later. */
export interface PhoneAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** An envelope as the phone posts it (fixtures/android/*.json). */
interface Envelope {
  deviceId: string;
  event: string;
  id?: string;
  payload: Record<string, unknown>;
}

/**
 * `POST /webhooks/android` (docs/android.md): a phone's webhook, verified with the signing key
 * of a location its device serves. Status events settle the job sent under the message's
 * id; `sms:received` is handed to the inbound sink, and answered 200 only once it is
 * committed there. Anything not signed, signed wrong or too old is 401 and stored nowhere.
 */
export function createPhoneWebhook(deps: PhoneWebhookDeps) {
  const warnRefused = refusalLog(deps);
  return async function receive(raw: Uint8Array, signature: string | null, timestamp: string | null): Promise<PhoneAnswer> {
    const envelope = readEnvelope(raw);
    // Until the signature checks out, the body is anyone's: only its device is read, to find the key.
    const keys = envelope ? (await deps.phones.byDevice(envelope.deviceId)).map((p) => p.signingKey) : [];
    const check = checkPhoneSignature(raw, signature, timestamp, keys, deps.now());
    if (!envelope || check !== "ok") {
      const device = envelope ? ` from device ${printable(envelope.deviceId.slice(0, 64))}` : "";
      warnRefused(`phone webhook${device} refused: ${envelope ? check : "not an envelope"} signature; nothing stored`);
      return { status: 401, body: { error: "invalid webhook signature" } };
    }
    if (envelope.event === "sms:received") return received(deps, envelope);
    if (envelope.event === "sms:delivered" || envelope.event === "sms:failed") return settle(deps, envelope);
    // sms:sent says the carrier took it, which is not delivery: the message log says so, nothing settles.
    if (envelope.event === "sms:sent") return sent(deps, envelope);
    // system:ping and the rest need nothing.
    return { status: 200, body: { ok: true } };
  };
}

/** Refusals logged in a minute at most: anyone can post, and must not flood the log. */
const REFUSALS_LOGGED = 20;

/** A warning per refused webhook, at most REFUSALS_LOGGED a minute; the last one says the rest are not logged. */
function refusalLog({ log, now }: Pick<PhoneWebhookDeps, "log" | "now">): (line: string) => void {
  let minute = -Infinity;
  let count = 0;
  return (line) => {
    if (now() - minute >= 60_000) [minute, count] = [now(), 0];
    count++;
    if (count < REFUSALS_LOGGED) log.warn(line);
    else if (count === REFUSALS_LOGGED) log.warn(`${line}; further refusals this minute are not logged`);
  };
}

async function received(deps: PhoneWebhookDeps, envelope: Envelope): Promise<PhoneAnswer> {
  // No sink: not acknowledged, so the phone keeps it and tries again (for about two days).
  if (!deps.sink) return { status: 503, body: { error: "inbound not configured" } };
  const p = envelope.payload;
  const from = text(p.sender) || text(p.phoneNumber);
  if (!from || typeof p.message !== "string") return { status: 400, body: { error: "sms:received without sender or message" } };
  const reply: InboundReply = {
    source: "android",
    from,
    text: p.message,
    deviceId: envelope.deviceId,
    ...(text(p.recipient) && { to: text(p.recipient) }),
    ...(text(p.receivedAt) && { receivedAt: text(p.receivedAt) }),
  };
  const { id, duplicate } = await deps.sink.receive(reply);
  return { status: 200, body: { id, duplicate } };
}

/**
 * A status event settles the job sent under the message's id through the device that
 * signed it, if it still waits: delivery reads the phone's word as a poll's would be.
 * Another device's event settles nothing: one phone's key must not settle another
 * location's message.
 */
async function settle(deps: PhoneWebhookDeps, envelope: Envelope): Promise<PhoneAnswer> {
  const job = await waitingJob(deps, envelope);
  if (!job) return { status: 200, body: { ok: true, settled: false } };
  const state = envelope.event === "sms:delivered" ? "Delivered" : "Failed";
  const status = phoneStatus({ id: job.key, state, reason: text(envelope.payload.reason) });
  const settled = await deps.settleReceipt({ job, status });
  return { status: 200, body: { ok: true, settled } };
}

/** `sms:sent`: the phone sent the message (the carrier took it); recorded for the message log. */
async function sent(deps: PhoneWebhookDeps, envelope: Envelope): Promise<PhoneAnswer> {
  const job = await waitingJob(deps, envelope);
  if (job) await deps.jobs.sentByPhone(job.id, deps.now(), "sms:sent");
  return { status: 200, body: { ok: true } };
}

/** The job an event names, if it still waits for its receipt and went through the event's device; undefined otherwise. */
async function waitingJob(deps: PhoneWebhookDeps, envelope: Envelope): Promise<(PhoneJob & { key: string }) | undefined> {
  const id = text(envelope.payload.messageId);
  const job = id ? await deps.phoneJobs.sentAs(id) : undefined;
  if (!job || !job.waiting) return undefined;
  if (job.apiKeyTag !== keyTag(phoneKey(envelope.deviceId))) {
    const [device, message] = [envelope.deviceId, id].map((s) => printable(s.slice(0, 64)));
    deps.log.warn(`phone webhook from device ${device}: ${envelope.event} for message ${message}, which was not sent through it; ignored`);
    return undefined;
  }
  return { ...job, key: id };
}

function readEnvelope(raw: Uint8Array): Envelope | undefined {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(raw).toString("utf8"));
  } catch {
    return undefined;
  }
  const e = body as Partial<Envelope> | null;
  if (typeof e?.deviceId !== "string" || typeof e.event !== "string" || !e.payload || typeof e.payload !== "object") return undefined;
  return e as Envelope;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}
