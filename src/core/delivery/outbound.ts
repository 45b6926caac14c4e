import { randomUUID } from "node:crypto";
import pRetry from "p-retry";
import type { Commit } from "../../db/commit.ts";
import type { Claim, Job, JobStore, OutboundMessage, Result, SendLater } from "../../db/jobs.ts";
import type { FailureCode } from "../../db/failures.ts";
import type { GatewayKeys } from "../../db/gateway-keys.ts";
import type { TokenStore } from "../../db/tokens.ts";
import type { SendRequest, SmsGateway } from "../clients/gateway.ts";
import type { CrmClient, MessageStatus } from "../clients/crm.ts";
import { API_KEY } from "../config-values.ts";
import { AppError, CrmError, errorMessage, type ErrorCode } from "../../errors.ts";
import type { Logger } from "../log.ts";
import type { KeyHolds } from "./holds.ts";
import { maskPhone, maskSecret } from "../mask.ts";
import type { MessageMetrics } from "../operator/metrics.ts";
import type { Outages } from "../operator/outages.ts";
import { awaitReceipt, firstLook, type ReceiptBook } from "./receipts.ts";
import type { Scheduler } from "./scheduler.ts";
import { composeText, smsParts } from "./parts.ts";
import { keyTag } from "./key-tag.ts";
import { toLocalPH } from "./phone.ts";
import { printable } from "../printable.ts";
import { delayMs, pRetryOptions, RESEND_WINDOW_MS, RETRY } from "../retry.ts";
import { afterFailure, lookAgainMs, unlessMaybeSent } from "./send-failure.ts";
import { sendingWith, sharedRefusal, type SharedSending } from "../installs/locations.ts";
import type { OptOutList } from "../inbound/reply.ts";
import { OPTED_OUT, unlessUnsubscribed, type UnsubscribedLists } from "./opt-out.ts";
import type { TokenService } from "../installs/tokens.ts";

export interface OutboundDeps {
  tokens: TokenStore;
  jobs: JobStore;
  /** Every change of a job's state goes through it: committed before the work it announces. */
  commit: Commit;
  tokenService: TokenService;
  sms: SmsGateway;
  /** Cast's rate limits: a send goes only with a token of both budgets. */
  scheduler: Scheduler;
  /** API keys Cast refused (401, 402, 403): their messages wait. */
  holds: KeyHolds;
  /** Delivery receipts read in batches from each key's log. */
  receiptBook: ReceiptBook;
  /** The key each send went with, kept by its tag: its receipt is asked with it even after the key was changed. */
  sentKeys: Pick<GatewayKeys, "keep" | "sentWith">;
  crm: CrmClient;
  /** The operator's key and sender ID, and who may use them: checked at every send. */
  defaults: SharedSending;
  now: () => number;
  log: Logger;
  /** First delay before re-trying a status report (RETRY.report). */
  reportBackoffMs?: number;
  /** Status reports tried at most this often before the job is given up (RETRY.report). */
  reportAttempts?: number;
  /** First wait before storing a send's result again. */
  storeRetryMs?: number;
  /** A message of more parts is refused (SMS_MAX_PARTS). */
  maxParts: number;
  /** Longest a message waits out a gateway that does not answer clearly (SMS_HOLD_MAX). */
  holdMaxMs: number;
  /** First wait before a send without a clear answer is tried again; doubles up to a minute. */
  sendBackoffMs?: number;
  /** Longest a delivery receipt is awaited before the report (DLR_WAIT); 0: not asked for. */
  dlrWaitMs: number;
  /** First look for a receipt after a send. */
  receiptPollMs?: number;
  /** How long past DLR_WAIT a status call that gets no answer is tried again. */
  receiptGraceMs?: number;
  /** The locations' opt-out lists: a send to a listed number fails before any gateway call. */
  optOuts?: Pick<OptOutList, "has">;
  /** Cast's unsubscribed lists, per API key: a send to a number on it for its sender ID fails too. */
  unsubscribed?: UnsubscribedLists;
  /** Told when a message is done with, and when its receipt came. */
  metrics?: MessageMetrics;
  /** Told of each message that waits for an outage of Cast or HighLevel: the outage's lines speak for it. */
  outages?: Pick<Outages, "waited">;
  /** The key of the phone a location sends through (delivery/phones.ts); undefined: it sends through Cast. */
  phoneFor?: (locationId: string) => string | undefined;
  /** How long a send with this key waits for its receipt, when not DLR_WAIT (a phone's). */
  receiptWaitMs?: (apiKey: string) => number | undefined;
  /** Whether a send with this key still without a final receipt at its deadline is delivery unknown (a phone's). */
  unknownWithoutReceipt?: (apiKey: string) => boolean;
}

export { RESEND_WINDOW_MS } from "../retry.ts";


/**
 * "processOutbound": sends a queued job's SMS exactly once, then reports its status to
 * the CRM. The claim (state "sending", with the job's idempotency key) is committed
 * before the gateway call; every later attempt carries the same key, so a timeout, a
 * 5xx or a crash mid-send is retried without a second SMS. Reports are idempotent too.
 */
export async function processOutbound(deps: OutboundDeps, job: Job): Promise<number | void> {
  if (job.state === "queued") {
    let plan = prepare(deps, job);
    if ("request" in plan) {
      const held = heldTooLong(deps, job, plan.request.apiKey);
      if (held && "waitMs" in held) {
        // Shown as held in the message log, with the gateway's reason; not due again until a
        // probe may have freed the key (a release wakes it), so that held messages take no
        // turns from their location's reports, nor from the locations of other keys.
        await deps.commit(() => deps.jobs.markHeld(job.id, held.reason, deps.now() + held.waitMs, deps.now()));
        return;
      }
      if (held) plan = { result: held };
    }
    plan = await unlessUnsubscribed(deps, job, plan);
    // No budget yet: the job stays queued and the caller says when to look again,
    // holding no worker meanwhile.
    if ("request" in plan) {
      const wait = deps.scheduler.trySend(plan.request.apiKey, job.message.locationId);
      if (wait > 0) {
        // Let through as a held key's send probe, it did not go: the probe is not spent.
        deps.holds.notProbed(plan.request.apiKey);
        return wait;
      }
    }
    const claim: Claim | undefined =
      "request" in plan ? { idempotencyKey: plan.request.idempotencyKey, apiKeyTag: plan.tag, senderId: plan.request.senderId } : undefined;
    const claimedAt = deps.now();
    // A refusal makes no gateway call, so it is stored straight from the queue: a crash
    // before it is stored leaves the job queued, not "sending" and so "delivery unknown".
    const apiKey = "request" in plan ? plan.request.apiKey : "";
    if (claim && !(await deps.commit(() => claimWithKey(deps, job.id, claimedAt, claim, apiKey)))) return;
    const sending = { ...job, firstSentAt: job.firstSentAt ?? claimedAt };
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
    await storeResult(deps, job, result, receipt);
    // With a receipt to wait for, the worker comes back for it when it is due.
    if (receipt) return;
    job = { ...job, state: "reporting", attempts: 0, outcome: result.outcome, ...nullable(result) };
  }
  if (job.state === "reporting" && job.receiptDeadline !== null) {
    const settled = await awaitReceipt(deps, job, receiptKey(deps, job));
    if (typeof settled === "number") return settled;
    if (!settled) return;
    job = { ...job, outcome: settled.outcome, errorCode: settled.errorCode ?? job.errorCode, errorMessage: settled.errorMessage ?? job.errorMessage };
  }
  if (job.state === "reporting") return report(deps, job);
}

/** Claims the job for its send, its key kept first: a key that cannot be kept leaves the job queued, not "sending". */
function claimWithKey(deps: OutboundDeps, id: number, at: number, claim: Claim, apiKey: string): boolean {
  deps.sentKeys.keep(claim.apiKeyTag, maskSecret(apiKey), apiKey);
  return deps.jobs.claimForSending(id, at, claim);
}

/** What to send, or why it cannot be sent. Reads the location's settings now, so changes apply at once. */
function prepare(deps: OutboundDeps, job: Job): { request: SendRequest; tag: string } | { result: Result } {
  const { message } = job;
  const { locationId } = message;
  const record = deps.tokens.get(locationId);
  if (!record) return { result: failed("no_token", `no token for location: ${locationId}`) };
  if (record.uninstalledAt) {
    return { result: failed("uninstalled", `location ${locationId} has uninstalled the app; reinstall it to send again`) };
  }
  const to = toLocalPH(message.phone);
  // The reason is stored, logged, listed and reported: the webhook's phone in it is masked, then escaped.
  if (!to) return { result: failed("invalid_phone", `not a Philippine mobile number: ${printable(maskPhone(message.phone))}`) };
  if (deps.optOuts?.has(locationId, message.phone)) return { result: failed("opted_out", OPTED_OUT) };
  const text = composeText(message);
  if (text.length === 0) return { result: failed("empty_message", "the message has no text") };
  if (text.length > deps.sms.maxMessageLength) {
    const why = `the message is ${text.length} characters; the SMS gateway takes at most ${deps.sms.maxMessageLength}`;
    return { result: failed("message_too_long", why) };
  }
  // One message must not burn a surprise amount of credit: each part costs one.
  const { parts } = smsParts(text);
  if (parts > deps.maxParts) return { result: failed("too_many_parts", `${parts} parts; at most ${deps.maxParts} allowed`) };
  const phone = deps.phoneFor?.(locationId);
  if (phone) return viaPhone(deps, job, phone, { to, message: text });
  const { apiKey, senderId } = sendingWith(record, deps.defaults);
  const refusal = !record.smsApiKey && deps.defaults.apiKey ? sharedRefusal(record, deps.defaults.allowedCompanyIds) : undefined;
  // After an attempt with no clear answer the SMS may have left: not a plain failure.
  if (refusal && job.firstSentAt !== null) {
    return { result: failed("delivery_unknown", `location ${locationId} ${refusal}, after an attempt that got no clear answer; delivery unknown`) };
  }
  if (refusal) return { result: failed("not_approved", `location ${locationId} ${refusal}`) };
  if (!apiKey) return { result: failed("no_api_key", "no SMS gateway API key: set SMS_API_KEY or this location's sms_api_key") };
  // Keys are checked when set; one stored before that check could not travel in a header.
  if (!API_KEY.pattern.test(apiKey)) return { result: failed("invalid_api_key", `the SMS gateway API key ${API_KEY.says}: set it again`) };
  const tag = keyTag(apiKey);
  const unknown = lostAttempt(deps, job, tag);
  if (unknown) return { result: failed("delivery_unknown", unknown) };
  const idempotencyKey = job.idempotencyKey ?? randomUUID();
  return { request: { apiKey, to, message: text, senderId, idempotencyKey }, tag };
}

/** A location that sends through its phone: the phone's key, no sender ID; the job's key is the message's id there. */
function viaPhone(deps: OutboundDeps, job: Job, apiKey: string, sms: { to: string; message: string }): { request: SendRequest; tag: string } | { result: Result } {
  const tag = keyTag(apiKey);
  const unknown = lostAttempt(deps, job, tag);
  if (unknown) return { result: failed("delivery_unknown", unknown) };
  return { request: { apiKey, ...sms, senderId: "", idempotencyKey: job.idempotencyKey ?? randomUUID() }, tag };
}

/**
 * An earlier attempt got no clear answer. Its key is scoped to the API key it went with,
 * and Cast forgets it after 24 h: past either, a new attempt could send a second SMS.
 */
function lostAttempt(deps: OutboundDeps, job: Job, tag: string): string | undefined {
  if (job.firstSentAt === null) return undefined;
  if (job.apiKeyTag !== null && job.apiKeyTag !== tag) {
    return "the SMS API key changed after an attempt that got no clear answer; delivery unknown";
  }
  if (deps.now() - job.firstSentAt > RESEND_WINDOW_MS) return "no clear answer from the gateway within 20 hours; delivery unknown";
  return undefined;
}

/**
 * A message on a held key waits (the ms to wait), until it has waited SMS_HOLD_MAX since
 * it was accepted: then it fails with the gateway's reason. Undefined: the key is not held.
 */
function heldTooLong(deps: OutboundDeps, job: Job, apiKey: string): { waitMs: number; reason: string } | Result | undefined {
  const hold = deps.holds.check(apiKey);
  if (!hold) return undefined;
  const waitMs = lookAgainMs(deps, job);
  if (waitMs > 0) return { waitMs, reason: hold.reason };
  // After an earlier attempt that may have sent it, "delivery unknown" (unlessMaybeSent).
  return failed("gateway_key_refused", `the SMS gateway refused this location's API key for longer than SMS_HOLD_MAX: ${hold.reason}`);
}

/**
 * The API key a sent message's receipt is asked with: the one it was sent with (Cast
 * lists a message only under its own account), found by its tag among the location's
 * key and the shared one, else among the keys kept since its send (the configuration
 * changed meanwhile); "" when none is it.
 */
function receiptKey(deps: OutboundDeps, job: Job): string {
  const record = deps.tokens.get(job.message.locationId);
  const now = record ? sendingWith(record, deps.defaults).apiKey : "";
  if (job.apiKeyTag === null) return now; // sent by an older bridge, which kept no tag
  const configured = [now, record?.smsApiKey, deps.defaults.apiKey].find((key) => key && keyTag(key) === job.apiKeyTag);
  return configured ?? deps.sentKeys.sentWith(job.apiKeyTag) ?? "";
}

/** A message that cannot go: the operator's log says why, as the CRM will. */
function refused(deps: OutboundDeps, message: OutboundMessage, result: Result): Result {
  deps.log.warn(`message ${message.messageId} of location ${message.locationId} not sent: ${result.errorMessage}`);
  return result;
}

/** The send's result, or when to try again: a refusal is final, anything unclear is retried with the same key. */
async function send(
  deps: OutboundDeps,
  job: Job,
  request: SendRequest,
): Promise<Result | ({ retryAt: number; reason: string } & SendLater)> {
  const { messageId, locationId } = job.message;
  try {
    const sent = await deps.sms.send(request);
    // It was a probe, or a probe freed the key meanwhile. A 200 Cast kept from before the
    // hold proves nothing about the key now: only a fresh one lifts it.
    if (!sent.replayed) deps.holds.sent(request.apiKey);
    deps.log.info(`message ${messageId} of location ${locationId} sent (gateway id ${sent.messageId})`);
    return { outcome: "delivered", gatewayMessageId: sent.messageId, parts: sent.parts };
  } catch (error) {
    return afterFailure(deps, job, request, error);
  }
}

/**
 * After the gateway call the result exists only in memory, and nothing else will pick
 * up a job left "sending" while this process runs. So a refused write (a locked or
 * full disk) is tried again until it is stored: 100 ms, doubling up to 30 s. If the
 * process stops first, the next start sends it again with its key (Cast replays the answer).
 */
async function storeResult(deps: OutboundDeps, job: Job, result: Result, receipt?: { at: number; deadline: number }): Promise<void> {
  const what = `message ${job.message.messageId}: its result (${result.outcome}${result.gatewayMessageId ? `, gateway id ${result.gatewayMessageId}` : ""})`;
  await storeUntilDone(deps, what, () => deps.jobs.recordResult(job.id, result, deps.now(), receipt));
}

/** Commits `write`, trying again while the database refuses it. */
async function storeUntilDone(deps: OutboundDeps, what: string, write: () => void): Promise<void> {
  try {
    await pRetry(() => deps.commit(write), {
      ...pRetryOptions(RETRY.storeResult, deps.storeRetryMs),
      onFailedAttempt: ({ error, retryDelay }) => {
        // No delay: p-retry gives up (a TypeError, such as a closed database).
        if (retryDelay > 0) deps.log.error(`${what} could not be stored: ${errorMessage(error)}; trying again in ${retryDelay} ms`);
      },
    });
  } catch (error) {
    throw new Error(`${what} could not be stored (${errorMessage(error)}); after a restart the send is tried again with its idempotency key`, { cause: error });
  }
}

/** Reports the job's outcome; a number: the ms until it may look again (its token is being renewed). */
async function report(deps: OutboundDeps, job: Job): Promise<number | void> {
  const { messageId, locationId } = job.message;
  const status: MessageStatus =
    job.outcome === "delivered"
      ? { status: "delivered" }
      : { status: "failed", error: { code: job.errorCode ?? "send_failed", type: "saas", message: job.errorMessage ?? "not sent" } };
  let accessToken: string | undefined;
  try {
    const valid = await deps.tokenService.forJob(locationId);
    // Renewed by another job right now, or HighLevel asked to wait: waited in the queue.
    if ("waitMs" in valid) return valid.waitMs;
    ({ accessToken } = valid);
    await deps.crm.updateMessageStatus(accessToken, messageId, status);
    await deps.commit(() => deps.jobs.reported(job.id, status.status, deps.now()));
    deps.metrics?.finished(job);
    deps.log.debug(`message ${messageId}: reported ${status.status}`);
  } catch (error) {
    // 401: the CRM no longer takes this access token (revoked or rotated elsewhere);
    // a fresh one is worth a try. 403 is HighLevel's "too early", not a token problem.
    if (accessToken && error instanceof CrmError && error.httpStatus === 401) {
      await deps.tokenService.rejected(locationId, accessToken).catch(() => undefined);
    }
    await retryReport(deps, job, error);
  }
}

/** Schedules the next report in the database, so a waiting report holds no worker slot. */
async function retryReport(deps: OutboundDeps, job: Job, error: unknown): Promise<void> {
  const { messageId, locationId } = job.message;
  const attempt = job.attempts + 1;
  if (!reportRetryable(error) || attempt >= (deps.reportAttempts ?? RETRY.report.tries)) {
    await deps.commit(() => deps.jobs.giveUp(job.id, deps.now(), errorMessage(error)));
    deps.metrics?.finished(job);
    deps.log.error(`message ${messageId} of location ${locationId}: status not reported: ${errorMessage(error)}`);
    return;
  }
  deps.outages?.waited("crm", messageId);
  // A 429 (to the report or to its token's renewal) is waited out at least as long as asked.
  const asked = error instanceof AppError ? (error.retryAfterMs ?? 0) : 0;
  const delay = Math.max(asked, delayMs(RETRY.report, job.attempts, deps.reportBackoffMs));
  await deps.commit(() => deps.jobs.retryLater(job.id, deps.now() + delay, errorMessage(error), deps.now()));
  deps.log.debug(`message ${messageId}: status report failed (${errorMessage(error)}), retry ${attempt} in ${delay} ms`);
}

/** A report that met these may pass: a refresh, a store or the key may work at the next try. */
const REPORT_MAY_PASS = new Set<ErrorCode>(["REFRESH_FAILED", "STORE_FAILED", "ENCRYPTION_KEY"]);

/**
 * A status PUT may be retried: it is idempotent. HighLevel answers 403 for the first
 * seconds after a webhook, so 403 is retried (without refreshing the token), as are
 * 429, 5xx, timeouts and refused connections. Other 4xx will not get better.
 */
export function reportRetryable(error: unknown): boolean {
  if (error instanceof CrmError && error.httpStatus !== undefined) {
    const s = error.httpStatus;
    return s === 401 || s === 403 || s === 408 || s === 429 || s >= 500;
  }
  // ENCRYPTION_KEY: a CLI command sealed a secret this server cannot read until it restarts with the key.
  // Any other (NO_TOKEN: the location is gone) will not get better.
  if (error instanceof AppError) return REPORT_MAY_PASS.has(error.code);
  return true; // a network failure or a timeout
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
