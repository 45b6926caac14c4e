import type { Commit } from "../db/commit.ts";
import type { Job, JobStore, Receipt } from "../db/jobs.ts";
import type { DeliveryStatus, SmsGateway } from "./clients/gateway.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "./log.ts";
import type { MessageMetrics } from "./metrics.ts";
import type { Scheduler } from "./scheduler.ts";

export interface ReceiptDeps {
  sms: SmsGateway;
  /** Each key's newest messages and their statuses, read in one call. */
  receiptBook: ReceiptBook;
  jobs: JobStore;
  commit: Commit;
  scheduler: Scheduler;
  now: () => number;
  log: Logger;
  /** First look for a receipt after a send; later looks are further apart. */
  receiptPollMs?: number;
  /** Told how long each receipt took to come. */
  metrics?: MessageMetrics;
}

/** Receipts come seconds to minutes after the send: look after 5 s, then at a quarter of the time since, at most every 2 min. */
const FIRST_LOOK_MS = 5_000;
const MAX_GAP_MS = 2 * 60_000;

/** When to look first for the receipt of a message sent at `sentAt`. */
export function firstLook(deps: Pick<ReceiptDeps, "receiptPollMs">, sentAt: number): number {
  return sentAt + (deps.receiptPollMs ?? FIRST_LOOK_MS);
}

/**
 * Cast's 200 means accepted, not delivered (CONTRACT.md 5.7): before a sent message is
 * reported, its receipt is asked for until it is final or DLR_WAIT is over. Returns
 * what settled the outcome; undefined when it is not settled yet (the next look is
 * scheduled); a number: the ms to wait for the process's request budget.
 */
export async function awaitReceipt(deps: ReceiptDeps, job: Job, apiKey: string): Promise<Receipt | number | undefined> {
  const { messageId, locationId } = job.message;
  const now = deps.now();
  if (job.receiptDeadline === null || !job.gatewayMessageId || !apiKey || now >= job.receiptDeadline) {
    deps.log.info(`message ${messageId} of location ${locationId}: no delivery receipt in time; reported delivered (the gateway accepted it)`);
    return settle(deps, job, { outcome: "delivered", receipt: "none" });
  }
  let status: DeliveryStatus | undefined;
  try {
    const found = await deps.receiptBook.find(apiKey, job.gatewayMessageId, job.firstSentAt ?? now);
    if (typeof found === "number") return found;
    if (found === "ask") {
      // Not on the newest page of the account's log: ask for this one message.
      const wait = deps.scheduler.tryPoll();
      if (wait > 0) return wait;
      status = await deps.sms.status(apiKey, job.gatewayMessageId);
    } else {
      status = found;
    }
  } catch (error) {
    deps.log.debug(`message ${messageId}: delivery status not read (${errorMessage(error)}); asking again later`);
  }
  const receipt = status && readReceipt(status);
  if (receipt) {
    deps.metrics?.receipt(now - (job.firstSentAt ?? now), receipt.outcome);
    if (receipt.outcome === "failed") deps.log.warn(`message ${messageId} of location ${locationId} failed: ${receipt.errorMessage}`);
    else deps.log.debug(`message ${messageId}: delivered (${receipt.receipt})`);
    return settle(deps, job, receipt);
  }
  const sentAt = job.firstSentAt ?? now;
  const gap = Math.min(MAX_GAP_MS, Math.max(deps.receiptPollMs ?? FIRST_LOOK_MS, (now - sentAt) / 4));
  const at = Math.min(now + gap, job.receiptDeadline);
  await deps.commit(() => deps.jobs.receiptLater(job.id, at, deps.now()));
  return undefined;
}

/** A key's log is read again when older than this; one read settles every receipt on it. */
const BOOK_FRESH_MS = 5_000;
/** Past this since the send, a message not on the log's newest page is asked for by itself. */
const ASK_ALONE_AFTER_MS = 60_000;
const PAGE = 500;

/**
 * Receipts in batches (CONTRACT.md 5.7): `/api/v1/sms/logs` gives the newest 500 messages
 * of an account with their statuses, so a drain of many messages costs a log read every
 * few seconds per key instead of a status call per message.
 */
export function createReceiptBook(options: { sms: SmsGateway; scheduler: Scheduler; freshMs?: number }) {
  const freshMs = options.freshMs ?? BOOK_FRESH_MS;
  const books = new Map<string, { at: number; byId: Map<string, DeliveryStatus>; reading?: Promise<void> }>();

  function read(apiKey: string, book: { at: number; byId: Map<string, DeliveryStatus>; reading?: Promise<void> }): Promise<void> {
    book.reading ??= options.sms
      .logs(apiKey, PAGE)
      .then((byId) => {
        book.byId = byId;
        book.at = Date.now();
      })
      .finally(() => (book.reading = undefined));
    return book.reading;
  }

  return {
    /**
     * The message's status from its key's log; "ask": ask for it alone (it is not on the
     * newest page, or was sent long enough ago that it should be); undefined: not listed
     * yet; a number: the ms to wait for the request budget.
     */
    async find(apiKey: string, messageId: string, sentAt: number): Promise<DeliveryStatus | "ask" | number | undefined> {
      let book = books.get(apiKey);
      if (!book) books.set(apiKey, (book = { at: 0, byId: new Map() }));
      if (Date.now() - book.at >= freshMs) {
        if (!book.reading) {
          const wait = options.scheduler.tryPoll();
          if (wait > 0) return wait;
        }
        await read(apiKey, book);
      }
      const found = book.byId.get(messageId);
      if (found) return found;
      const pageFull = book.byId.size >= PAGE;
      return pageFull || Date.now() - sentAt > ASK_ALONE_AFTER_MS ? "ask" : undefined;
    },
  };
}

export type ReceiptBook = ReturnType<typeof createReceiptBook>;

/** Cast's final statuses as HighLevel's; undefined while not final (sent, pending). */
export function readReceipt(status: DeliveryStatus): Receipt | undefined {
  if (status.status === "delivered") return { outcome: "delivered", receipt: status.dlrStatus || "DELIVRD" };
  if (status.status !== "undelivered" && status.status !== "failed") return undefined;
  const code = status.dlrStatus || (status.status === "failed" ? "FAILED" : "UNDELIV");
  const said = status.errorMessage ? `: ${status.errorMessage}` : "";
  return { outcome: "failed", receipt: code, errorCode: code, errorMessage: `${CARRIER_SAYS[code] ?? `not delivered (${code})`}${said}` };
}

const CARRIER_SAYS: Record<string, string> = {
  REJECTD: "the carrier rejected the message (REJECTD)",
  UNDELIV: "the carrier could not deliver the message (UNDELIV)",
  EXPIRED: "the message expired before the carrier could deliver it (EXPIRED)",
  FAILED: "the gateway could not submit the message to the carrier; its credits were refunded (FAILED)",
};

async function settle(deps: ReceiptDeps, job: Job, receipt: Receipt): Promise<Receipt> {
  await deps.commit(() => deps.jobs.recordReceipt(job.id, receipt, deps.now()));
  return receipt;
}
