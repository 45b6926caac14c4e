import type { JobStore } from "../../store/contract.ts";
import type { Job, Receipt } from "../../store/types.ts";
import { ms } from "../../db/ms.ts";
import { UNSENT, type DeliveryStatus, type SmsGateway } from "../clients/gateway.ts";
import { GatewayError, errorMessage } from "../../errors.ts";
import type { Logger } from "../log.ts";
import type { MessageMetrics } from "../operator/metrics.ts";
import type { ReceiptBook } from "./receipt-book.ts";
import { readReceipt } from "./receipt-words.ts";
import type { Scheduler } from "./scheduler.ts";

export { createReceiptBook, type ReceiptBook } from "./receipt-book.ts";
export { readReceipt } from "./receipt-words.ts";

export interface ReceiptDeps {
  sms: SmsGateway;
  /** Each key's log, read in batches: most receipts come from it. */
  receiptBook: ReceiptBook;
  jobs: JobStore;
  scheduler: Scheduler;
  now: () => number;
  log: Logger;
  /** First look for a receipt after a send; later looks are further apart. */
  receiptPollMs?: number;
  /** How long past the deadline a last status call that got no answer is tried again. */
  receiptGraceMs?: number;
  /** Told how long each receipt took to come. */
  metrics?: MessageMetrics;
  /**
   * Whether a message sent with this key and without a final receipt at its deadline is
   * delivery unknown rather than delivered, unless it was seen to leave (`sent`): true for a phone's.
   */
  unknownWithoutReceipt?: (apiKey: string) => boolean;
}

/** Look first 5 s after a send. */
const FIRST_LOOK_MS = 5_000;
/** While the key's log is read, a job looks in this often (the book wakes it sooner when its receipt is read). */
const WATCH_MS = 60_000;
/** Asking alone: at a quarter of the time since the send, at most every 2 min. */
const MAX_GAP_MS = 2 * 60_000;
/**
 * The last status call got no answer (a 5xx, a timeout): Cast may hold a refusal, so it
 * is asked again, further apart each time, for this long past the deadline.
 */
const GRACE_MS = 10 * 60_000;

/** When to look first for the receipt of a message sent at `sentAt`. */
export function firstLook(deps: Pick<ReceiptDeps, "receiptPollMs">, sentAt: number): number {
  return ms(sentAt + (deps.receiptPollMs ?? FIRST_LOOK_MS));
}

/**
 * When a message sent at `sentAt` looks again, in whole ms, never past its deadline:
 * soon while it is asked for alone, else once a minute (the key's log reader wakes it
 * as soon as it reads the receipt).
 */
export function nextLook(now: number, sentAt: number, deadline: number, asking: boolean, firstMs = FIRST_LOOK_MS): number {
  const gap = asking ? Math.min(MAX_GAP_MS, Math.max(firstMs, (now - sentAt) / 4)) : Math.max(firstMs, WATCH_MS);
  return ms(Math.min(now + gap, deadline));
}

/**
 * Cast's 200 means accepted, not delivered (docs/architecture.md, "Receipts"): before a sent message is
 * reported, its receipt is looked for until it is final or DLR_WAIT is over. The key's
 * log (receipt-book.ts) answers for most; a message the log cannot tell of is asked for
 * alone, and every message gets one last status call at its deadline (again, for a
 * while, when it gets no answer). Returns what
 * settled the outcome; undefined when it is not settled yet (the next look is
 * scheduled); a number: the ms to wait for the process's request budget.
 */
export async function awaitReceipt(deps: ReceiptDeps, job: Job, apiKey: string): Promise<Receipt | number | undefined> {
  const now = deps.now();
  if (job.receiptDeadline === null || !job.gatewayMessageId) return noReceipt(deps, job);
  if (!apiKey) return withoutKey(deps, job, job.receiptDeadline);
  const waiting = { jobId: job.id, messageId: job.gatewayMessageId, sentAt: sentAt(job, now) };
  const look = deps.receiptBook.look(apiKey, waiting);
  const read = typeof look === "object" ? readReceipt(look.status) : undefined;
  if (read) return settle(deps, job, apiKey, read);
  const last = now >= job.receiptDeadline;
  let asked: Asked | undefined;
  if (look === "ask" || last) {
    const answer = await ask(deps, job, apiKey);
    if (typeof answer === "number") return answer;
    if ("status" in answer && answer.status === UNSENT) return sendAgain(deps, job, apiKey, answer.errorMessage);
    const told = "status" in answer && readReceipt(answer);
    if (told) return settle(deps, job, apiKey, told);
    if (last && "failed" in answer) return unanswered(deps, job, apiKey, answer.failed);
    asked = answer;
  }
  if (last) {
    const listed = deps.receiptBook.statusOf(apiKey, waiting.messageId) !== undefined;
    deps.receiptBook.settled(apiKey, waiting.messageId);
    return noReceipt(deps, job, asked && await unknownWhy(deps, job, apiKey, asked, listed));
  }
  const at = nextLook(now, waiting.sentAt, job.receiptDeadline, look === "ask", deps.receiptPollMs);
  await deps.jobs.receiptLater(job.id, at, deps.now());
  // A read that found the receipt while this look was being stored woke the job too
  // early to count (the look above put it off again): it settles now instead.
  const meanwhile = deps.receiptBook.statusOf(apiKey, waiting.messageId);
  const late = meanwhile && readReceipt(meanwhile);
  return late ? settle(deps, job, apiKey, late) : undefined;
}

/**
 * When the send Cast accepted went: the last attempt's, not the first claim's. A message
 * sent again after a 5xx or a timeout may have first been claimed long before; its
 * receipt is looked for, asked for alone and timed from the send that went.
 */
function sentAt(job: Job, now: number): number {
  return job.sentAt ?? job.firstSentAt ?? now;
}

/** What a status call told: the status, that the gateway knows no such message, or no answer. */
type Asked = DeliveryStatus | { unknown: true } | { failed: string };

/**
 * The message's status by itself (`GET /api/v1/sms/status/{id}`); a number: the ms to
 * wait for the budget; `unknown`: Cast answered it knows no such message (not_found); `failed`:
 * no clear answer (a 5xx, a timeout, no connection), so nothing is known.
 */
async function ask(deps: ReceiptDeps, job: Job, apiKey: string): Promise<Asked | number> {
  const wait = deps.scheduler.tryPoll(apiKey);
  if (wait > 0) return wait;
  try {
    const status = await deps.sms.status(apiKey, job.gatewayMessageId ?? "");
    // A phone's `Sent`: the message log shows it left the phone (Cast's "sent" is no news: no commit).
    const phone = deps.unknownWithoutReceipt?.(apiKey) ?? false;
    if (phone && status.status === "sent") await deps.jobs.sentByPhone(job.id, deps.now(), "its state, read from the phone");
    return status;
  } catch (error) {
    if (error instanceof GatewayError && error.failure === "rate_limited") {
      deps.scheduler.slowDown(undefined, error.retryAfterMs ?? 1000);
      return error.retryAfterMs ?? 1000;
    }
    deps.log.debug(`message ${job.message.messageId}: delivery status not read (${errorMessage(error)})`);
    if (error instanceof GatewayError && error.failure === "not_found") return { unknown: true };
    return { failed: errorMessage(error) };
  }
}

/**
 * The status call at or past the deadline got no answer: asked again, 5 s and then
 * further apart (at most 2 min), until the grace is over; then taken as no receipt,
 * its timeline saying the status could not be read.
 */
async function unanswered(deps: ReceiptDeps, job: Job, apiKey: string, why: string): Promise<Receipt | undefined> {
  const now = deps.now();
  const deadline = job.receiptDeadline ?? now;
  const end = deadline + (deps.receiptGraceMs ?? GRACE_MS);
  if (now >= end) {
    await deps.jobs.noteError(job.id, `its delivery status could not be read by the end of DLR_WAIT: ${why}`, deps.now());
    deps.receiptBook.settled(apiKey, job.gatewayMessageId ?? "");
    return noReceipt(deps, job, await unknownWhy(deps, job, apiKey, { failed: why }));
  }
  const gap = Math.min(MAX_GAP_MS, Math.max(deps.receiptPollMs ?? FIRST_LOOK_MS, now - deadline));
  await deps.jobs.receiptLater(job.id, ms(Math.min(now + gap, end)), deps.now());
  return undefined;
}

/**
 * The gateway proves the message never went (a phone's send limit, RESULT_ERROR_LIMIT_EXCEEDED):
 * not failed, it goes back to the queue under a new id, once its key's budget has backed off.
 */
async function sendAgain(deps: ReceiptDeps, job: Job, apiKey: string, why: string): Promise<undefined> {
  const waitMs = deps.scheduler.limited(apiKey);
  deps.receiptBook.settled(apiKey, job.gatewayMessageId ?? "");
  const reason = `not sent: ${why}; it goes again in ${Math.ceil(waitMs / 1000)} s, its sender slowed down`;
  deps.log.warn(`message ${job.message.messageId} of location ${job.message.locationId}: ${reason}`);
  await deps.jobs.sendAgain(job.id, deps.now() + waitMs, reason, deps.now());
  return undefined;
}

/** The carrier's receipt settles the message. */
async function settle(deps: ReceiptDeps, job: Job, apiKey: string, receipt: Receipt): Promise<Receipt | undefined> {
  const { messageId, locationId } = job.message;
  deps.receiptBook.settled(apiKey, job.gatewayMessageId ?? "");
  deps.metrics?.receipt(deps.now() - sentAt(job, deps.now()), receipt.outcome);
  if (receipt.outcome === "failed") deps.log.warn(`message ${messageId} of location ${locationId} failed: ${receipt.errorMessage}`);
  else deps.log.debug(`message ${messageId}: delivered (${receipt.receipt})`);
  return record(deps, job, receipt);
}

/** Why a message waits without its receipt asked for (its timeline says it). */
export const KEY_GONE = "its delivery receipt cannot be asked for: the SMS API key it was sent with is no longer configured";

/**
 * Neither the configuration nor the kept keys hold the key the message was sent with (a
 * message of an older bridge, or the kept key does not open): Cast tells of it to no
 * other key. Never reported delivered for that alone: it waits out DLR_WAIT (the key may
 * come back), and is then taken as without a receipt.
 */
async function withoutKey(deps: ReceiptDeps, job: Job, deadline: number): Promise<Receipt | undefined> {
  await deps.jobs.noteError(job.id, KEY_GONE, deps.now());
  if (deps.now() >= deadline) return noReceipt(deps, job);
  await deps.jobs.receiptLater(job.id, deadline, deps.now());
  return undefined;
}

/**
 * DLR_WAIT is over without a final receipt: Cast accepted it (or the phone's carrier took
 * it, `Sent`), so it is reported delivered (CONTRACT 7). `unknown`: why a phone's is not (it
 * was never seen to leave the phone: still Pending or Processed, unknown to the phone, or
 * unreadable): reported failed, delivery unknown.
 */
function noReceipt(deps: ReceiptDeps, job: Job, unknown?: string): Promise<Receipt | undefined> {
  const { messageId, locationId } = job.message;
  if (unknown) {
    const errorMessage = `${unknown}; delivery unknown`;
    deps.log.warn(`message ${messageId} of location ${locationId}: ${errorMessage}`);
    return record(deps, job, { outcome: "failed", receipt: "none", errorCode: "delivery_unknown", errorMessage });
  }
  deps.log.info(`message ${messageId} of location ${locationId}: no delivery receipt in time; reported delivered (the gateway accepted it)`);
  return record(deps, job, { outcome: "delivered", receipt: "none" });
}

/**
 * Why a message without a final state at its deadline is delivery unknown; undefined when it
 * is reported delivered (CONTRACT 7). Cast's: only when its status call answers it knows no
 * such message (404) and its log never listed it: nothing then says it reached the carrier,
 * and nothing says it did not (Cast accepted it), so neither delivered nor a carrier's refusal.
 * `listed`: the key's log listed it (Cast submitted it).
 */
async function unknownWhy(deps: ReceiptDeps, job: Job, apiKey: string, asked: Asked, listed = false): Promise<string | undefined> {
  const phone = deps.unknownWithoutReceipt?.(apiKey) ?? false;
  if (!phone) return "unknown" in asked && !listed ? "Cast no longer knows the message (404 to its status call) and its log never listed it" : undefined;
  // The phone said it sent it (sms:sent, or a state read): the carrier took it, whatever the
  // last look met (the phone off, its data cleared). Reported failed, it would be sent twice.
  if (await deps.jobs.wasSentByPhone(job.id)) return undefined;
  if ("unknown" in asked) return "the phone no longer knows the message (404)";
  if ("failed" in asked) return `its state could not be read from the phone by the end of its wait: ${asked.failed}`;
  // The carrier took it; many phones and carriers never send a delivery report: as Cast's (CONTRACT 7).
  if (asked.status === "sent") return undefined;
  return `the phone still had it as ${asked.status} at the end of its wait`;
}

/**
 * Stores the receipt; undefined when the job no longer awaited one (a phone's status
 * webhook settled it meanwhile): its stored outcome is reported, at its next turn, not this one.
 */
async function record(deps: ReceiptDeps, job: Job, receipt: Receipt): Promise<Receipt | undefined> {
  return (await deps.jobs.recordReceipt(job.id, receipt, deps.now())) ? receipt : undefined;
}
