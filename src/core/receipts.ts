import type { Commit } from "../db/commit.ts";
import type { Job, JobStore, Receipt } from "../db/jobs.ts";
import type { DeliveryStatus, SmsGateway } from "./clients/cast.ts";
import { errorMessage } from "./errors.ts";
import type { Logger } from "./log.ts";
import type { Scheduler } from "./scheduler.ts";

export interface ReceiptDeps {
  sms: SmsGateway;
  jobs: JobStore;
  commit: Commit;
  scheduler: Scheduler;
  now: () => number;
  log: Logger;
  /** First look for a receipt after a send; later looks are further apart. */
  receiptPollMs?: number;
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
  const wait = deps.scheduler.tryPoll();
  if (wait > 0) return wait;
  let status: DeliveryStatus | undefined;
  try {
    status = await deps.sms.status(apiKey, job.gatewayMessageId);
  } catch (error) {
    deps.log.debug(`message ${messageId}: delivery status not read (${errorMessage(error)}); asking again later`);
  }
  const receipt = status && readReceipt(status);
  if (receipt) {
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
