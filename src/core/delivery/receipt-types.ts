/** What the receipt book (receipt-book.ts) and its reads (receipt-reads.ts) share. */
import type { DeliveryStatus, SmsGateway } from "../clients/gateway.ts";
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
  /**
   * Servers sharing a database: whether this server reads the key's log now (it holds the
   * key's lease: key-owners.ts); the others leave the key to its owner. Default: always.
   */
  owns?: (apiKey: string) => Promise<boolean>;
  /** A read found nothing of the key waiting anywhere: its lease goes, so a message another server sends next is read at once. */
  letGo?: (apiKey: string) => Promise<void>;
  /** Every message of the key waiting in the database, whichever server's job looked: a read looks for them all. */
  awaited?: (apiKey: string, limit: number) => Promise<Waiting[]>;
  /**
   * Records a final status a read found into its job, so whichever server runs it next
   * reports it; true when it did (false: the job no longer waits). Instead of `wake`.
   */
  record?: (waiting: Waiting, status: DeliveryStatus) => Promise<boolean>;
}

/** A sent message that waits for its receipt. */
export interface Waiting {
  jobId: number;
  /** The id Cast answered its send with. */
  messageId: string;
  sentAt: number;
  /** HighLevel's message id and location, for the log, when known. */
  crmMessageId?: string;
  locationId?: string;
}
