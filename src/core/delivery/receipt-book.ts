import { GatewayError, errorMessage } from "../../errors.ts";
import type { DeliveryStatus, SmsGateway } from "../clients/gateway.ts";
import type { Logger } from "../log.ts";
import { maskSecret } from "../mask.ts";
import { sleep } from "../retry.ts";
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
}

/** A sent message that waits for its receipt. */
export interface Waiting {
  jobId: number;
  /** The id Cast answered its send with. */
  messageId: string;
  sentAt: number;
}

/**
 * What the key's log says of a waiting message: its status as of the last read; "ask":
 * the log cannot tell (its read fails, or it did not list the message), so ask for the
 * message alone; undefined: not read yet (the book wakes the job when its receipt is read).
 */
export type Look = { status: DeliveryStatus } | "ask" | undefined;

/** Cast's statuses that settle a message. */
export function isFinal(status: DeliveryStatus | undefined): boolean {
  return status?.status === "delivered" || status?.status === "undelivered" || status?.status === "failed";
}

/** A key's log is read again at most this often while a message of the key waits. */
const FRESH_MS = 5_000;
/** After a read of n pages the next waits n times this share of FRESH_MS, if longer: a deep log is read less often. */
const PAGE_SHARE = 0.3;
/** Cast's log pages: the most it gives at once. */
const PAGE = 500;
/** A read goes no further back than this many pages (10,000 messages); older ones are asked for alone. */
const MAX_PAGES = 20;
/** How far before the oldest waiting send a read still looks: Cast's clock and ours, and its whole seconds. */
const SKEW_MS = 30_000;
/** A message read past but not listed is asked for alone once it is this old. */
const ASK_ALONE_AFTER_MS = 60_000;
/** A waiting message not looked for in this long is forgotten (its job ended or left this process). */
const STALE_MS = 5 * 60_000;

/**
 * Receipts in batches (docs/architecture.md, "Receipts"; CAST_API.md): per API key, one reader pages
 * through `/api/v1/sms/logs` from the newest entry back to the key's oldest waiting send,
 * every few seconds while anything waits, so one pass serves every waiting message of
 * the key, however many there are. Jobs look here when they are due (`look`); a pass
 * that reads a final receipt wakes its job. Driven by the messages that wait: a key
 * with none is not read.
 */
export function createReceiptBook(options: ReceiptBookOptions) {
  const { sms, scheduler, log, now } = options;
  const freshMs = options.freshMs ?? FRESH_MS;
  const keys = new Map<string, KeyLog>();
  let stopped = false;

  function keyLog(apiKey: string): KeyLog {
    let k = keys.get(apiKey);
    if (!k) keys.set(apiKey, (k = { waiting: new Map(), statuses: new Map(), reading: false, readAt: -Infinity, pages: 0 }));
    return k;
  }

  /** Starts the key's next read when it is due, unless one is on its way. */
  function plan(apiKey: string, k: KeyLog): void {
    if (stopped || k.reading || k.timer || k.waiting.size === 0) return;
    const gap = freshMs * Math.max(1, k.pages * PAGE_SHARE);
    k.timer = setTimeout(() => void read(apiKey, k), Math.max(0, k.readAt + gap - Date.now()));
    k.timer.unref();
  }

  async function read(apiKey: string, k: KeyLog): Promise<void> {
    k.timer = undefined;
    k.reading = true;
    k.readAt = Date.now();
    forgetStale(k);
    try {
      const wanted = new Map(k.waiting);
      if (wanted.size === 0) return;
      const { statuses, pages } = await readBack(apiKey, wanted);
      k.statuses = statuses;
      k.pages = pages;
      for (const [id, w] of wanted) Object.assign(w, { asking: false, missed: w.missed || !statuses.has(id) });
    } catch (error) {
      const rateLimited = error instanceof GatewayError && error.failure === "rate_limited";
      log.debug(`receipts: the log of key ${maskSecret(apiKey)} not read (${errorMessage(error)}); ${rateLimited ? "read again later" : "each message is asked for alone meanwhile"}`);
      // A 429 slows every call of the process; it says nothing against the log itself.
      if (rateLimited) return scheduler.slowDown(undefined, error.retryAfterMs ?? 1000);
      // The log fails: its messages ask for themselves until a read succeeds.
      const told = [...k.waiting.values()].filter((w) => !w.asking);
      for (const w of told) w.asking = true;
      await wakeJobs(told, false);
      return;
    } finally {
      k.reading = false;
      plan(apiKey, k);
    }
    await wakeJobs([...k.waiting.values()].filter((w) => !w.woken && isFinal(k.statuses.get(w.messageId))), true);
  }

  /** Pages back from the newest entry until every wanted message is listed or its send is behind. */
  async function readBack(apiKey: string, wanted: Map<string, Waiting>): Promise<{ statuses: Map<string, DeliveryStatus>; pages: number }> {
    const statuses = new Map<string, DeliveryStatus>();
    const oldest = [...wanted.values()].reduce((min, w) => Math.min(min, w.sentAt), Infinity);
    let offset = 0;
    let pages = 0;
    while (pages < MAX_PAGES && !stopped) {
      await budget();
      const page = await sms.logs(apiKey, { limit: PAGE, offset });
      pages++;
      for (const [id, status] of page.statuses) if (wanted.has(id)) statuses.set(id, status);
      const behind = page.oldestAt !== undefined && page.oldestAt < oldest - SKEW_MS;
      if (page.last || behind || statuses.size === wanted.size) break;
      offset += page.entries;
    }
    return { statuses, pages };
  }

  /** Waits for a token of the process's request budget (sends keep theirs). */
  async function budget(): Promise<void> {
    for (let wait = scheduler.tryPoll(); wait > 0 && !stopped; wait = scheduler.tryPoll()) await sleep(wait);
  }

  /** These jobs look again now: a read found their receipt (`once`: not again for it), or the log fails. */
  async function wakeJobs(found: WaitingHere[], once: boolean): Promise<void> {
    if (found.length === 0 || stopped) return;
    try {
      await options.wake(found.map((w) => w.jobId));
      if (once) for (const w of found) w.woken = true;
    } catch (error) {
      // Their jobs still look at their own times; the next read tries again.
      log.warn(`receipts: ${found.length} job(s) waiting for a receipt not woken: ${errorMessage(error)}`);
    }
  }

  function forgetStale(k: KeyLog): void {
    const t = now();
    for (const [id, w] of k.waiting) if (t - w.lookedAt > STALE_MS) k.waiting.delete(id);
  }

  return {
    /** What the key's log says of `waiting`; registers it, so the key's reads look for it. */
    look(apiKey: string, waiting: Waiting): Look {
      const k = keyLog(apiKey);
      const known = k.waiting.get(waiting.messageId);
      const t = now();
      if (known) known.lookedAt = t;
      else k.waiting.set(waiting.messageId, { ...waiting, lookedAt: t, woken: false, missed: false, asking: false });
      plan(apiKey, k);
      const status = k.statuses.get(waiting.messageId);
      if (status) return { status };
      if (known?.asking) return "ask";
      // A read went past it without finding it (or not far enough back): the log cannot tell.
      if (known?.missed && t - waiting.sentAt > ASK_ALONE_AFTER_MS) return "ask";
      return undefined;
    },
    /** The message's status as the key's last read found it, if it did. */
    statusOf(apiKey: string, messageId: string): DeliveryStatus | undefined {
      return keys.get(apiKey)?.statuses.get(messageId);
    },
    /** The message's receipt settled it: no read looks for it again. */
    settled(apiKey: string, messageId: string): void {
      const k = keys.get(apiKey);
      k?.waiting.delete(messageId);
      k?.statuses.delete(messageId);
    },
    /** No further reads (the process stops). */
    stop(): void {
      stopped = true;
      for (const k of keys.values()) clearTimeout(k.timer);
    },
  };
}

export type ReceiptBook = ReturnType<typeof createReceiptBook>;

/**
 * A waiting message as its key's reader knows it: when its job last looked; `woken` for
 * its receipt; `missed`: a read did not list it; `asking`: a read failed since it came,
 * so it is asked for alone until one succeeds.
 */
type WaitingHere = Waiting & { lookedAt: number; woken: boolean; missed: boolean; asking: boolean };

/** One API key's log as the book knows it. */
interface KeyLog {
  waiting: Map<string, WaitingHere>;
  /** The waiting messages the last read listed, with their status then. */
  statuses: Map<string, DeliveryStatus>;
  reading: boolean;
  /** When the last read started (Date.now), and how many pages it took. */
  readAt: number;
  pages: number;
  timer?: ReturnType<typeof setTimeout>;
}
