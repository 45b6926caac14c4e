import type { DeliveryStatus } from "./clients/gateway.ts";

/** A message's status a gateway pushed to bridge (a phone's webhook), for the job that waits for it. */
export interface PushedReceipt {
  job: { id: number; messageId: string; parts: number | null };
  status: DeliveryStatus;
}

/**
 * The seam between a gateway's webhook (inbound) and delivery, which settles receipts:
 * true when the job was settled by it. Implemented by `createReceiptSettler`
 * (src/core/delivery/receipt-settle.ts).
 */
export type SettleReceipt = (pushed: PushedReceipt) => Promise<boolean>;
