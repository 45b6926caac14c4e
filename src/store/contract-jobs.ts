import type {
  Backlog, Claim, DueJob, Job, JobState, LoggedMessage, MessageEvent, MessageFilter, OutboundMessage, PhoneJob, Receipt, Result, SendLater, Usage,
} from "./types.ts";

/** A send's API key, kept (sealed) with its claim until the job's receipt settles. */
export interface KeptKey {
  /** The key as shown: masked. */
  masked: string;
  apiKey: string;
}

/** A sent message waiting for its receipt, as its key's log reader looks for it. */
export interface AwaitedReceipt {
  jobId: number;
  /** The id the gateway answered its send with. */
  messageId: string;
  /** When the send that went went. */
  sentAt: number;
  /** HighLevel's message id and location, for the log. */
  crmMessageId: string;
  locationId: string;
}

/** At most `count` messages whose id starts with `prefix` within `windowMs`: the test SMS's limit. */
export interface EnqueueLimit {
  count: number;
  windowMs: number;
  prefix: string;
}

/**
 * The durable work queue: a job moves queued -> sending -> reporting -> done, each move
 * committed before the work it announces. Every method is one transaction; writes share
 * the store's group commit (docs/PERFORMANCE.md) and settle once on disk.
 */
export interface JobStore {
  /**
   * Adds a new job; false when this messageId was seen before, however long ago.
   * `alone`: no other write is on its way, so it commits at once instead of after the window.
   */
  enqueue(message: OutboundMessage, now: number, alone?: boolean): Promise<boolean>;
  /** Adds a new job unless `limit` is reached (counted in the same transaction): 0, or the ms until one more may go. */
  enqueueLimited(message: OutboundMessage, now: number, limit: EnqueueLimit): Promise<number>;
  /** Due jobs in turns between locations; `waiting`: locations whose sends wait for a budget (only their reports are read). */
  due(now: number, limit: number, waiting?: (locationId: string) => boolean): Promise<DueJob[]>;
  /**
   * Jobs a crash caught mid-send: resent with their key when first used at or after the
   * cutoff of their gateway's kind (`since`, by kind: `cast`, `android`; the kind of
   * `jobs.gateway`, before any `:`); else failed, never resent. A kind not named: none is resent.
   * `servers`: only the sends these servers claimed (servers sharing a database: those whose
   * heartbeat stopped), which stay fenced against them; none given: every send caught.
   */
  recoverInterrupted(
    now: number,
    since: Readonly<Record<string, number>>,
    servers?: readonly string[],
  ): Promise<{ resumed: number; failed: { messageId: string; locationId: string }[] }>;
  /** Deletes up to `limit` finished jobs last changed before `before`; how many it deleted. */
  prune(before: number, limit: number): Promise<number>;
  /** The whole job, to run it. */
  byId(id: number): Promise<Job | undefined>;
  get(messageId: string): Promise<Job | undefined>;
  counts(): Promise<Partial<Record<JobState, number>>>;
  /** When the oldest job still waiting to be sent was accepted; undefined when none waits. */
  oldestQueuedAt(): Promise<number | undefined>;
  /** A run of the job threw `reason`: on its timeline once, until the reason changes. */
  noteError(id: number, reason: string, now: number): Promise<void>;
  /**
   * Marks the job as being sent, with the attempt's idempotency key; committed before the
   * gateway call; false if another worker took it. No claim: failed without a send.
   * `key`: the API key it goes with, kept until its receipt settles, in the same transaction.
   */
  claimForSending(id: number, now: number, claim?: Claim, key?: KeptKey): Promise<boolean>;
  /** Queued again for `at`, with the same key, or (`how.freshKey`) a fresh one. */
  sendLater(id: number, at: number, reason: string, now: number, how?: SendLater): Promise<void>;
  /** A sent message the gateway proves never went: queued again for `at` under a fresh key, as if new. */
  sendAgain(id: number, at: number, reason: string, now: number): Promise<void>;
  /**
   * The send's result; with `receipt`, the report waits for the carrier's receipt (first
   * look at `receipt.at`). `unclaimed`: a refusal stored straight from the queue, no claim
   * made; else stored only while the job is this server's claim (several servers).
   */
  recordResult(id: number, result: Result, now: number, receipt?: { at: number; deadline: number }, unclaimed?: boolean): Promise<void>;
  /** Waits on a key the gateway refused until `at`: shown as held, with `reason`. */
  markHeld(id: number, reason: string, at: number, now: number): Promise<void>;
  /** A held key works again: every held message is due now; how many. */
  wakeHeld(now: number): Promise<number>;
  /** No final receipt yet: look again at `at`. */
  receiptLater(id: number, at: number, now: number): Promise<void>;
  /** The phone says it sent the message (`how`: an event, a read of its state): on its timeline once. */
  sentByPhone(id: number, now: number, how: string): Promise<void>;
  /** Whether the phone has said it sent the message: the carrier took it. */
  wasSentByPhone(id: number): Promise<boolean>;
  /**
   * Up to `limit` messages sent with key `apiKeyTag` and waiting for their receipt, the
   * oldest first: what the key's log reader looks for, whichever server's job last looked.
   */
  awaitingReceipts(apiKeyTag: string, limit: number): Promise<AwaitedReceipt[]>;
  /** A read of the log found these jobs' receipts: they look again now. */
  receiptsDue(ids: number[], now: number): Promise<void>;
  /** The receipt settled the outcome: the report goes next. False when the job no longer awaits it. */
  recordReceipt(id: number, receipt: Receipt, now: number): Promise<boolean>;
  /**
   * Takes the job's report for this server until `until` (servers sharing a database: the
   * one that takes it reports it): false when it is not due at `now` (another took it).
   * Its report's outcome (reported, retryLater, giveUp) ends the take.
   */
  takeReport(id: number, now: number, until: number): Promise<boolean>;
  /** HighLevel took the status: the job is done. */
  reported(id: number, status: string, now: number): Promise<void>;
  /** The status report is given up (`reason`): the job is dead. */
  giveUp(id: number, now: number, reason: string): Promise<void>;
  /** The status report failed for `reason`: try again at `at`. */
  retryLater(id: number, at: number, reason: string, now: number): Promise<void>;
}

/** The jobs as the message log shows them: what the operator lists, shows and retries. */
export interface MessageLog {
  list(filter: MessageFilter): Promise<LoggedMessage[]>;
  get(messageId: string): Promise<LoggedMessage | undefined>;
  /** What happened to the message besides its columns: errors, holds, retries. */
  events(id: number): Promise<MessageEvent[]>;
  /** How many messages of the log are in each status. */
  counts(): Promise<Record<"queued" | "sending" | "delivered" | "failed" | "held" | "sent" | "on_phone", number>>;
  /** Each location with messages still to send, the longest waiting first. */
  backlog(): Promise<Backlog[]>;
  /** Queues a failed message again, as new; false when the job changed since `message` was read. */
  requeue(message: LoggedMessage, now: number, detail: string): Promise<boolean>;
  /** The location's messages received at or after `since`, by what became of them. */
  usage(locationId: string, since: number): Promise<Usage>;
  /** When each of the location's messages whose id starts with `prefix` was received, at or after `since`, the oldest first. */
  receivedSince(locationId: string, since: number, prefix: string): Promise<number[]>;
}

/** The jobs sent through a phone, as the phone names them. */
export interface PhoneJobs {
  /** The job sent under `id` (its idempotency key); undefined when none was. */
  sentAs(id: string): Promise<PhoneJob | undefined>;
  /**
   * When each message claimed with key `apiKeyTag` through a gateway other than Cast (a
   * phone) was first sent, at or after `since`, the oldest first: the phone's hour, as the
   * server that starts sending through it counts it.
   */
  sentSince(apiKeyTag: string, since: number): Promise<number[]>;
}
