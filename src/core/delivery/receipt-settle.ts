import type { JobStore } from "../../store/contract.ts";
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
