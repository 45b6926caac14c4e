import { randomUUID } from "node:crypto";
import type { Claim, FailureCode, Job, OutboundMessage, Result, SendLater } from "../../store/types.ts";
import type { SendRequest } from "../clients/gateway.ts";
import { API_KEY } from "../config-values.ts";
import { maskPhone, maskSecret } from "../mask.ts";
import { awaitReceipt, firstLook } from "./receipts.ts";
import { composeText, smsParts } from "../parts.ts";
import { keyTag } from "../key-tag.ts";
import { toLocalPH } from "../phone.ts";
import { printable } from "../printable.ts";
import { afterFailure, heldTooLong, unlessMaybeSent } from "./send-failure.ts";
import { report } from "./report.ts";
import { storeResult, storeUntilDone } from "./store-result.ts";
import { sendingWith, sharedRefusal } from "../installs/locations.ts";
import { OPTED_OUT, unlessUnsubscribed } from "./opt-out.ts";
import type { OutboundDeps, PrepareDeps, SendDeps } from "./outbound-deps.ts";
import type { Turn } from "./send-order.ts";

export type { OutboundDeps };

/** What to send (`fresh`: with a new idempotency key in place of the job's), or why it cannot be sent. */
type Plan = { request: SendRequest; tag: string; fresh?: boolean } | { result: Result };

/**
 * "processOutbound": sends a queued job's SMS exactly once, then reports its status to
 * the CRM. The claim (state "sending", with the job's idempotency key) is committed
 * before the gateway call; every later attempt carries the same key, so a timeout, a
 * 5xx or a crash mid-send is retried without a second SMS. Reports are idempotent too.
 */
export async function processOutbound(deps: OutboundDeps, job: Job, turn?: Turn): Promise<number | void> {
  if (job.state === "queued") {
    let plan = await prepare(deps, job);
    if ("request" in plan) {
      await deps.holds.look(plan.request.apiKey);
      const held = heldTooLong(deps, job, plan.request.apiKey);
      if (held && "waitMs" in held) {
        // Shown as held in the message log, with the gateway's reason; not due again until a
        // probe may have freed the key (a release wakes it), so that held messages take no
        // turns from their location's reports, nor from the locations of other keys.
        await deps.jobs.markHeld(job.id, held.reason, deps.now() + held.waitMs, deps.now());
        return;
      }
      if (held) plan = { result: held };
    }
    const checked = unlessUnsubscribed(deps, job, plan);
    // Cast's unsubscribed list not read yet, or no budget yet: the job stays queued and the
    // caller says when to look again, holding no worker meanwhile.
    if ("waitMs" in checked) return notSent(deps, plan, checked.waitMs);
    plan = checked;
    const wait = await takeBudgets(deps, plan, job.message.locationId, turn);
    if (wait > 0) return notSent(deps, plan, wait);
    const claim = "request" in plan ? claimOf(deps, plan) : undefined;
    const claimedAt = deps.now();
    // A refusal makes no gateway call, so it is stored straight from the queue: a crash
    // before it is stored leaves the job queued, not "sending" and so "delivery unknown".
    const apiKey = "request" in plan ? plan.request.apiKey : "";
    if (claim && !(await deps.jobs.claimForSending(job.id, claimedAt, claim, { masked: maskSecret(apiKey), apiKey }))) {
      deps.sendBudget.giveBack(apiKey, job.message.locationId);
      return await notClaimed(deps, job, apiKey);
    }
    const sending = { ...job, firstSentAt: claim?.fresh ? claimedAt : (job.firstSentAt ?? claimedAt) };
    const ending = "request" in plan ? await send(deps, sending, plan.request) : refused(deps, job.message, plan.result);
    const result = unlessMaybeSent(job, ending);
    if ("retryAt" in result) {
      await storeUntilDone(deps, `message ${job.message.messageId}: its next attempt`, () =>
        deps.jobs.sendLater(job.id, result.retryAt, result.reason, deps.now(), result),
      );
      return;
    }
    const now = deps.now();
    const waitMs = ("request" in plan && deps.receiptWaitMs?.(plan.request.apiKey)) || deps.dlrWaitMs;
    const receipt = result.gatewayMessageId && waitMs > 0 ? { at: firstLook(deps, now), deadline: now + waitMs } : undefined;
    await storeResult(deps, job, result, receipt, !claim);
    // With a receipt to wait for, the worker comes back for it when it is due.
    if (receipt) return;
    job = { ...job, state: "reporting", attempts: 0, outcome: result.outcome, ...nullable(result) };
  }
  if (job.state === "reporting" && job.receiptDeadline !== null) {
    const settled = await awaitReceipt(deps, job, await receiptKey(deps, job));
    if (typeof settled === "number") return settled;
    if (!settled) return;
    job = { ...job, outcome: settled.outcome, errorCode: settled.errorCode ?? job.errorCode, errorMessage: settled.errorMessage ?? job.errorMessage };
  }
  if (job.state === "reporting") return report(deps, job);
}

/**
 * The send's budgets, taken in its turn in its location's line (send-order.ts): 0 when it
 * may go now, else the ms it waits. A phone's message told to wait keeps its place (its
 * hourly count: one passed over may wait the hour); a Cast key's does not, so the key's
 * rate is not left unspent while it comes back. Behind a kept place, a job takes none.
 */
async function takeBudgets(deps: SendDeps, plan: Plan, locationId: string, turn?: Turn): Promise<number> {
  await turn?.turn;
  const behind = "request" in plan ? (turn?.ahead() ?? 0) : 0;
  const taken = "request" in plan && behind === 0 ? deps.sendBudget.take(plan.request.apiKey, locationId) : behind;
  // One server's budgets answer at once, in memory; only a store shared by servers is awaited.
  const wait = typeof taken === "number" ? taken : await taken;
  const keepsPlace = "request" in plan && behind === 0 && deps.sms.driverOf(plan.request.apiKey).budget !== undefined;
  turn?.pass(keepsPlace ? wait : 0);
  return wait;
}

/** What the send is claimed with; its parts are reserved against the location's monthly cap (over it, the claim fails the message). */
function claimOf(deps: SendDeps, plan: { request: SendRequest; tag: string; fresh?: boolean }): Claim {
  const { request } = plan;
  const parts = smsParts(request.message).parts;
  return { idempotencyKey: request.idempotencyKey, apiKeyTag: plan.tag, senderId: request.senderId, fresh: plan.fresh, gateway: gatewayOf(deps, request.apiKey), parts };
}

/**
 * Another worker took the job, or its location's monthly cap refused it in the claim (failed
 * there, `monthly_cap`, to be reported next): logged like any refusal, and a held key's probe it was is not spent.
 */
async function notClaimed(deps: SendDeps, job: Job, apiKey: string): Promise<void> {
  const now = await deps.jobs.byId(job.id);
  if (now?.errorCode !== "monthly_cap") return;
  deps.holds.notProbed(apiKey);
  refused(deps, job.message, { outcome: "failed", errorCode: now.errorCode, errorMessage: now.errorMessage ?? "" });
}

/** The gateway a key sends through, as the message log records it: a phone's key names its device. */
function gatewayOf(deps: Pick<OutboundDeps, "sms">, apiKey: string): string {
  return deps.sms.driverOf(apiKey).gatewayOf(apiKey);
}

/** The send waits `waitMs`; let through as a held key's send probe, it did not go: the probe is not spent. */
function notSent(deps: SendDeps, plan: Plan, waitMs: number): number {
  if ("request" in plan) deps.holds.notProbed(plan.request.apiKey);
  return waitMs;
}

/** What to send, or why it cannot be sent. Reads the location's settings now, so changes apply at once. */
async function prepare(deps: PrepareDeps, job: Job): Promise<Plan> {
  const { message } = job;
  const { locationId } = message;
  const record = await deps.tokens.get(locationId);
  if (!record) return { result: failed("no_token", `no token for location: ${locationId}`) };
  if (record.uninstalledAt) {
    return { result: failed("uninstalled", `location ${locationId} has uninstalled the app; reinstall it to send again`) };
  }
  const to = toLocalPH(message.phone);
  // The reason is stored, logged, listed and reported: the webhook's phone in it is masked, then escaped.
  if (!to) return { result: failed("invalid_phone", `not a Philippine mobile number: ${printable(maskPhone(message.phone))}`) };
  if (await deps.optOuts?.has(locationId, message.phone)) return { result: failed("opted_out", OPTED_OUT) };
  const text = composeText(message);
  if (text.length === 0) return { result: failed("empty_message", "the message has no text") };
  if (text.length > deps.sms.maxMessageLength) {
    const why = `the message is ${text.length} characters; the SMS gateway takes at most ${deps.sms.maxMessageLength}`;
    return { result: failed("message_too_long", why) };
  }
  // One message must not burn a surprise amount of credit: each part costs one.
  const { parts } = smsParts(text);
  if (parts > deps.maxParts) return { result: failed("too_many_parts", `${parts} parts; at most ${deps.maxParts} allowed`) };
  const phone = await deps.phoneFor?.(locationId);
  if (phone) return viaPhone(deps, job, phone, { to, message: text });
  const { apiKey, senderId } = sendingWith(record, deps.defaults);
  const refusal = !record.smsApiKey && deps.defaults.apiKey ? sharedRefusal(record, deps.defaults.allowedCompanyIds) : undefined;
  // After an attempt with no clear answer the SMS may have left: not a plain failure.
  if (refusal && job.unclear) {
    return { result: failed("delivery_unknown", `location ${locationId} ${refusal}, after an attempt that got no clear answer; delivery unknown`) };
  }
  if (refusal) return { result: failed("not_approved", `location ${locationId} ${refusal}`) };
  if (!apiKey) return { result: failed("no_api_key", "no SMS gateway API key: set SMS_API_KEY or this location's sms_api_key") };
  // Keys are checked when set; one stored before that check could not travel in a header.
  if (!API_KEY.pattern.test(apiKey)) return { result: failed("invalid_api_key", `the SMS gateway API key ${API_KEY.says}: set it again`) };
  const tag = keyTag(apiKey);
  const key = attemptKey(deps, job, apiKey);
  if ("lost" in key) return { result: failed("delivery_unknown", key.lost) };
  return { request: { apiKey, to, message: text, senderId, idempotencyKey: key.idempotencyKey }, tag, fresh: key.fresh };
}

/** A location that sends through its phone: the phone's key, no sender ID; the job's key is the message's id there. */
function viaPhone(deps: PrepareDeps, job: Job, apiKey: string, sms: { to: string; message: string }): Plan {
  const tag = keyTag(apiKey);
  const key = attemptKey(deps, job, apiKey);
  if ("lost" in key) return { result: failed("delivery_unknown", key.lost) };
  return { request: { apiKey, ...sms, senderId: "", idempotencyKey: key.idempotencyKey }, tag, fresh: key.fresh };
}

/**
 * The idempotency key of this attempt: the job's own while the gateway keeps it under this
 * API key. It is scoped to the API key it went with, and the gateway forgets it after its
 * driver's idempotency window (Cast: 24 h): past either, after an attempt that got no clear
 * answer (`unclear`: its SMS may have left), a new attempt could send a second SMS, so the
 * message's fate is unknown. When every attempt provably did not reach the gateway (a 429,
 * an unreachable gateway), nothing can go twice: it goes with a new key (`fresh`), under
 * the API key it has now.
 */
function attemptKey(deps: PrepareDeps, job: Job, apiKey: string): { idempotencyKey: string; fresh: boolean } | { lost: string } {
  if (job.idempotencyKey === null) return { idempotencyKey: randomUUID(), fresh: false };
  const otherApiKey = job.apiKeyTag !== null && job.apiKeyTag !== keyTag(apiKey);
  const windowMs = deps.sms.driverOf(apiKey).idempotencyWindowMs;
  const forgotten = job.firstSentAt !== null && deps.now() - job.firstSentAt > windowMs;
  if (!otherApiKey && !forgotten) return { idempotencyKey: job.idempotencyKey, fresh: false };
  if (!job.unclear) return { idempotencyKey: randomUUID(), fresh: true };
  if (otherApiKey) return { lost: "the SMS API key changed after an attempt that got no clear answer; delivery unknown" };
  return { lost: `no clear answer from the gateway within ${Math.round(windowMs / 3_600_000)} hours; delivery unknown` };
}

/**
 * The API key a sent message's receipt is asked with: the one it was sent with (Cast
 * lists a message only under its own account), found by its tag among the location's
 * key and the shared one, else among the keys kept since its send (the configuration
 * changed meanwhile); "" when none is it.
 */
async function receiptKey(deps: PrepareDeps, job: Job): Promise<string> {
  const record = await deps.tokens.get(job.message.locationId);
  const now = record ? sendingWith(record, deps.defaults).apiKey : "";
  if (job.apiKeyTag === null) return now; // sent by an older bridge, which kept no tag
  const configured = [now, record?.smsApiKey, deps.defaults.apiKey].find((key) => key && keyTag(key) === job.apiKeyTag);
  return configured ?? (await deps.sentKeys.sentWith(job.apiKeyTag)) ?? "";
}

/** A message that cannot go: the operator's log says why, as the CRM will. */
function refused(deps: Pick<OutboundDeps, "log">, message: OutboundMessage, result: Result): Result {
  deps.log.warn(`message ${message.messageId} of location ${message.locationId} not sent: ${result.errorMessage}`);
  return result;
}

/** The send's result, or when to try again: a refusal is final, anything unclear is retried with the same key. */
async function send(
  deps: SendDeps,
  job: Job,
  request: SendRequest,
): Promise<Result | ({ retryAt: number; reason: string } & SendLater)> {
  const { messageId, locationId } = job.message;
  try {
    const sent = await deps.sms.send(request);
    // It was a probe, or a probe freed the key meanwhile. A 200 Cast kept from before the
    // hold proves nothing about the key now: only a fresh one lifts it.
    if (!sent.replayed) await deps.holds.sent(request.apiKey);
    deps.log.info(`message ${messageId} of location ${locationId} sent (gateway id ${sent.messageId})`);
    return { outcome: "delivered", gatewayMessageId: sent.messageId, parts: sent.parts };
  } catch (error) {
    return afterFailure(deps, job, request, error);
  }
}

function failed(errorCode: FailureCode, errorMessage: string): Result {
  return { outcome: "failed", errorCode, errorMessage };
}

function nullable(result: Result) {
  return {
    errorCode: result.errorCode ?? null,
    errorMessage: result.errorMessage ?? null,
    gatewayMessageId: result.gatewayMessageId ?? null,
  };
}
