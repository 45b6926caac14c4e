/** What the receipt book (receipt-book.ts) and its reads (receipt-reads.ts) share. */
import type { SmsGateway } from "../clients/gateway.ts";
import type { Logger } from "../log.ts";
import type { Scheduler } from "./scheduler.ts";

export interface ReceiptBookOptions {
  sms: SmsGateway;
  scheduler: Scheduler;
  log: Logger;
  /** The jobs whose receipt a read found: due now (their next look settles them). */
  wake: (jobIds: number[]) => Promise<void>;
  /** The jobs' clock: the times of sends and looks. */
  now: () => number;
  /** Least time between two reads of one key's log. */
  freshMs?: number;
  /**
   * How the receipts of a key's messages arrive (its driver's `receipts.source`): "pushed",
   * the gateway keeps no log to read, and its messages are asked for alone. Default "log".
   */
  sourceOf?: (apiKey: string) => "log" | "pushed";
}

/** A sent message that waits for its receipt. */
export interface Waiting {
  jobId: number;
  /** The id Cast answered its send with. */
  messageId: string;
  sentAt: number;
}
