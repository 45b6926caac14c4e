import type { JobStore } from "../../store/contract.ts";
import type { DeliveryStatus } from "../clients/gateway.ts";
import type { MessageMetrics } from "../operator/metrics.ts";
import type { Waiting } from "./receipt-types.ts";
import type { Logger } from "../log.ts";
import type { SettleReceipt } from "../pushed-receipt.ts";
import { readReceipt } from "./receipt-words.ts";

export interface ReceiptSettlerDeps {
  jobs: Pick<JobStore, "recordReceipt" | "receiptsDue">;
  log: Logger;
  now: () => number;
  /** A job's receipt was recorded, or is due to be read: its turn is now. */
  notify: () => void;
}

/**
 * Settles a receipt a gateway pushed (src/core/pushed-receipt.ts), read as a poll's would be.
 * A message of several parts gets a status per part, so one only wakes its job, which then
 * reads the whole message's state from the gateway.
 */
export function createReceiptSettler(deps: ReceiptSettlerDeps): SettleReceipt {
  return async ({ job, status }) => {
    if ((job.parts ?? 1) > 1) {
      await deps.jobs.receiptsDue([job.id], deps.now());
      deps.log.debug(`message ${job.messageId}: a status (${status.status}) for one of its ${job.parts} parts; its whole state is read from the gateway`);
      deps.notify();
      return false;
    }
    const receipt = readReceipt(status);
    if (!receipt) return false;
    const settled = await deps.jobs.recordReceipt(job.id, receipt, deps.now());
    if (!settled) return false;
    deps.log.debug(`message ${job.messageId}: the gateway says ${status.status}`);
    deps.notify();
    return true;
  };
}

/**
 * Records a final status the key's log reader found into its job (receipt-reads.ts), as the
 * job's own look would settle it: whichever server runs the job next reports it. True
 * when the job still waited for it.
 */
export function createReadReceiptRecorder(deps: ReceiptSettlerDeps & { metrics?: Pick<MessageMetrics, "receipt"> }) {
  return async (waiting: Waiting, status: DeliveryStatus): Promise<boolean> => {
    const receipt = readReceipt(status);
    if (!receipt || !(await deps.jobs.recordReceipt(waiting.jobId, receipt, deps.now()))) return false;
    deps.metrics?.receipt(deps.now() - waiting.sentAt, receipt.outcome);
    const message = waiting.crmMessageId ? `message ${waiting.crmMessageId}` : `the message of job ${waiting.jobId}`;
    if (receipt.outcome === "failed") deps.log.warn(`${message}${waiting.locationId ? ` of location ${waiting.locationId}` : ""} failed: ${receipt.errorMessage}`);
    else deps.log.debug(`${message}: delivered (${receipt.receipt})`);
    deps.notify();
    return true;
  };
}
