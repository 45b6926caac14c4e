import { wallClock } from "../clock.ts";
import { GatewayError, errorMessage } from "../../errors.ts";
import type { DeliveryStatus } from "../clients/gateway.ts";
import { maskSecret } from "../mask.ts";
import { sleep } from "../retry.ts";
import type { ReceiptBookOptions, Waiting } from "./receipt-types.ts";

/** A key's log is read again at most this often while a message of the key waits. */
export const FRESH_MS = 5_000;
/** After a read of n pages the next waits n times this share of FRESH_MS, if longer: a deep log is read less often. */
const PAGE_SHARE = 0.3;
/** Cast's log pages: the most it gives at once (it may serve fewer). */
const PAGE = 500;
/** A read goes no further back than this many entries; older messages are asked for alone. */
const MAX_ENTRIES = 10_000;
/** How far before the oldest waiting send a read still looks: the clocks, as measured, and Cast's whole seconds. */
const SKEW_MS = 30_000;
/** How many found receipts are recorded at once. */
const RECORD_AT_ONCE = 8;
/** A read looks for at most this many of a key's messages the database says wait (awaited). */
export const MAX_AWAITED = 10_000;
/** A waiting message not looked for in this long is forgotten (its job ended or left this process). */
const STALE_MS = 5 * 60_000;

/** The statuses that settle a message ("unknown": the carrier's UNKNOWN, delivery unknown). */
const FINAL = new Set(["delivered", "undelivered", "failed", "unknown"]);

export function isFinal(status: DeliveryStatus | undefined): boolean {
  return FINAL.has(status?.status ?? "");
}

/** What every read of the book (receipt-book.ts) shares: its options, and whether it has stopped. */
export interface Reads {
  options: ReceiptBookOptions;
  freshMs: number;
  stopped: boolean;
  /** Our clock minus Cast's, as its log's times of our sends last told (0 until one did). */
  lagMs: number;
  /** What was logged once: the page size Cast serves, its clock being far from ours. */
  told: { pageSize: boolean; clock: boolean };
}

/** Starts the key's next read when it is due, unless one is on its way. */
export function plan(r: Reads, apiKey: string, k: KeyLog): void {
  if (r.stopped || k.reading || k.timer || (k.waiting.size === 0 && k.awaited === 0)) return;
  const gap = r.freshMs * Math.max(1, k.pages * PAGE_SHARE);
  k.timer = setTimeout(() => void read(r, apiKey, k), Math.max(0, k.readAt + gap - wallClock()));
  k.timer.unref();
}

async function read(r: Reads, apiKey: string, k: KeyLog): Promise<void> {
  k.timer = undefined;
  k.reading = true;
  k.readAt = wallClock();
  forgetStale(k, r.options.now());
  let wanted = new Map<string, WaitingHere>();
  try {
    if (!(await owns(r, apiKey))) return void (k.awaited = 0);
    wanted = await wantedOf(r, apiKey, k);
    // Nothing of the key waits anywhere: its lease goes, so a message another server sends next is read by it at once.
    if (wanted.size === 0) return void (await r.options.letGo?.(apiKey));
    const { statuses, pages } = await readBack(r, apiKey, wanted);
    k.statuses = statuses;
    k.pages = pages;
    for (const [id, w] of wanted) Object.assign(w, { asking: false, missed: w.missed || !statuses.has(id) });
    // Recorded before the next read is planned: no two passes record the same receipts.
    if (r.options.record) await recordFound(r, k, wanted);
  } catch (error) {
    const rateLimited = error instanceof GatewayError && error.failure === "rate_limited";
    r.options.log.debug(`receipts: the log of key ${maskSecret(apiKey)} not read (${errorMessage(error)}); ${rateLimited ? "read again later" : "each message is asked for alone meanwhile"}`);
    // A 429 slows every call of the process; it says nothing against the log itself.
    if (rateLimited) return r.options.scheduler.slowDown(undefined, error.retryAfterMs ?? 1000);
    // The log fails: its messages ask for themselves until a read succeeds.
    const told = [...k.waiting.values()].filter((w) => !w.asking);
    for (const w of told) w.asking = true;
    await wakeJobs(r, told, false);
    return;
  } finally {
    k.reading = false;
    plan(r, apiKey, k);
  }
  if (!r.options.record) await wakeJobs(r, [...k.waiting.values()].filter((w) => !w.woken && isFinal(k.statuses.get(w.messageId))), true);
}

/** Whether this server reads the key's log now (servers sharing a database: its owner only). */
async function owns(r: Reads, apiKey: string): Promise<boolean> {
  return r.stopped ? false : ((await r.options.owns?.(apiKey)) ?? true);
}

/** What a read looks for: the messages that looked here, and those the database says wait, whoever's job looked. */
async function wantedOf(r: Reads, apiKey: string, k: KeyLog): Promise<Map<string, WaitingHere>> {
  const awaited = await r.options.awaited?.(apiKey, MAX_AWAITED);
  if (awaited && awaited.length < MAX_AWAITED) {
    // The whole list: a message that looked here and is not on it waits no more (settled elsewhere).
    const ids = new Set(awaited.map((w) => w.messageId));
    for (const id of k.waiting.keys()) if (!ids.has(id)) k.waiting.delete(id);
  }
  const wanted = new Map(k.waiting);
  const t = r.options.now();
  for (const w of awaited ?? []) {
    const here = wanted.get(w.messageId);
    if (here) Object.assign(here, { crmMessageId: w.crmMessageId, locationId: w.locationId });
    else wanted.set(w.messageId, { ...w, lookedAt: t, woken: false, missed: false, asking: false });
  }
  k.awaited = awaited?.length ?? 0;
  return wanted;
}

/**
 * The final statuses the read found go into their jobs (whichever server runs a job next
 * reports it) and leave the book. One that cannot be recorded now stays for the next read.
 */
async function recordFound(r: Reads, k: KeyLog, wanted: Map<string, WaitingHere>): Promise<void> {
  const found = [...k.statuses].filter(([id, status]) => wanted.has(id) && isFinal(status));
  const one = async ([id, status]: [string, DeliveryStatus]): Promise<void> => {
    const w = wanted.get(id)!;
    try {
      await r.options.record?.(w, status);
      k.waiting.delete(id);
      k.statuses.delete(id);
    } catch (error) {
      r.options.log.warn(`receipts: the receipt of a message (job ${w.jobId}) not recorded: ${errorMessage(error)}; the next read tries again`);
    }
  };
  // A few at a time: a campaign's hundreds settle in the time of a few dozen writes.
  for (let i = 0; i < found.length && !r.stopped; i += RECORD_AT_ONCE) await Promise.all(found.slice(i, i + RECORD_AT_ONCE).map(one));
}

/**
 * Pages back from the newest entry until every wanted message is listed, the oldest
 * waiting send is listed or behind, or the log ends (an empty page), whatever the page
 * size Cast serves. "Behind" is read on our clock: Cast's times of the sends it lists
 * tell how far its clock is from ours.
 */
async function readBack(r: Reads, apiKey: string, wanted: Map<string, Waiting>): Promise<{ statuses: Map<string, DeliveryStatus>; pages: number }> {
  const statuses = new Map<string, DeliveryStatus>();
  const oldest = [...wanted.values()].reduce((min, w) => (w.sentAt < min.sentAt ? w : min));
  const lags: number[] = [];
  let offset = 0;
  let pages = 0;
  let shortPage = 0;
  while (offset < MAX_ENTRIES && !r.stopped) {
    await budget(r, apiKey);
    const page = await r.options.sms.logs(apiKey, { limit: PAGE, offset });
    pages++;
    if (page.entries === 0) break;
    if (shortPage) tellPageSize(r, shortPage);
    shortPage = page.entries < PAGE ? page.entries : 0;
    for (const [id, status] of page.statuses) if (wanted.has(id)) statuses.set(id, status);
    for (const [id, at] of page.sentAt) {
      const w = wanted.get(id);
      if (w) lags.push(w.sentAt - at);
    }
    const lagMs = lags.length > 0 ? Math.max(...lags) : r.lagMs;
    const behind = page.oldestAt !== undefined && page.oldestAt + lagMs < oldest.sentAt - SKEW_MS;
    if (behind || page.sentAt.has(oldest.messageId) || statuses.size === wanted.size) break;
    offset += page.entries;
  }
  if (lags.length > 0) learnLag(r, Math.max(...lags));
  return { statuses, pages };
}

/** A page shorter than asked, and more after it: the page size Cast serves, said once. */
function tellPageSize(r: Reads, entries: number): void {
  if (r.told.pageSize) return;
  r.told.pageSize = true;
  r.options.log.info(`receipts: Cast serves its log ${entries} entries a page (${PAGE} asked); each read pages on to an empty page or the oldest waiting send`);
}

/** How far Cast's clock is from ours; said once when it is further than a read allows for. */
function learnLag(r: Reads, lagMs: number): void {
  r.lagMs = lagMs;
  if (r.told.clock || Math.abs(lagMs) <= SKEW_MS) return;
  r.told.clock = true;
  const seconds = Math.round(Math.abs(lagMs) / 1000);
  r.options.log.info(`receipts: Cast's log dates our sends ${seconds} s ${lagMs > 0 ? "before" : "after"} we sent them; reads allow for it`);
}

/** Waits for a token of the process's request budget (sends keep theirs; a phone's key takes none). */
async function budget(r: Reads, apiKey: string): Promise<void> {
  const { scheduler } = r.options;
  for (let wait = scheduler.tryPoll(apiKey); wait > 0 && !r.stopped; wait = scheduler.tryPoll(apiKey)) await sleep(wait);
}

/** These jobs look again now: a read found their receipt (`once`: not again for it), or the log fails. */
async function wakeJobs(r: Reads, found: WaitingHere[], once: boolean): Promise<void> {
  if (found.length === 0 || r.stopped) return;
  try {
    await r.options.wake(found.map((w) => w.jobId));
    if (once) for (const w of found) w.woken = true;
  } catch (error) {
    // Their jobs still look at their own times; the next read tries again.
    r.options.log.warn(`receipts: ${found.length} job(s) waiting for a receipt not woken: ${errorMessage(error)}`);
  }
}

function forgetStale(k: KeyLog, t: number): void {
  for (const [id, w] of k.waiting) if (t - w.lookedAt > STALE_MS) k.waiting.delete(id);
}

/**
 * A waiting message as its key's reader knows it: when its job last looked; `woken` for
 * its receipt; `missed`: a read did not list it; `asking`: a read failed since it came,
 * so it is asked for alone until one succeeds.
 */
export type WaitingHere = Waiting & { lookedAt: number; woken: boolean; missed: boolean; asking: boolean };

/** One API key's log as the book knows it. */
export interface KeyLog {
  waiting: Map<string, WaitingHere>;
  /** The waiting messages the last read listed, with their status then. */
  statuses: Map<string, DeliveryStatus>;
  reading: boolean;
  /** When the last read started (the wall clock), and how many pages it took. */
  readAt: number;
  pages: number;
  /** How many of the key's messages the database said wait at this server's last read as its owner: it reads on while any do. */
  awaited: number;
  timer?: ReturnType<typeof setTimeout>;
}
