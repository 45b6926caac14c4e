import { wallClock } from "../clock.ts";
import { createTurns } from "./key-turns.ts";
/**
 * Cast.ph's two limits (docs/architecture.md, "Pacing and fair turns") as token buckets: one for every request the
 * process makes, all keys together (30/s, burst 50), and one per API key for sends
 * (10 messages/s). A send takes a token from both or from neither: a caller that gets
 * none is told how long to wait, and waits without holding a worker. The scheduler
 * also remembers when each location last got a turn, so the queue can serve the one
 * served longest ago first: a bulk campaign cannot hold up another location. A phone's
 * key has its own budget instead (per minute, and at most so many in any hour), and
 * backs off when the phone says it hit its send limit.
 */
export interface SchedulerOptions {
  requestsPerSecond: number;
  requestBurst: number;
  messagesPerSecond: number;
  /** Messages a key may send at once (default: one second's worth). */
  messageBurst?: number;
  /**
   * A key that is not Cast's (a phone's, "android:<device>") and its own pace: it takes no
   * token of Cast's process-wide budget, only its own; `perHour`: at most this many sends in
   * any hour (a SIM's carrier limit). Undefined for Cast's keys.
   */
  ownBudget?: (apiKey: string) => { perSecond: number; burst: number; perHour?: number } | undefined;
  /** The first wait of a key whose sender hit its send limit (default LIMITED_FIRST_MS); it doubles. */
  limitedMs?: number;
  now?: () => number;
}

/**
 * While sends take every token (three keys at full rate outrun the process's budget), a
 * receipt read still goes this often: without it no receipt would be read at all.
 */
const READ_FLOOR_MS = 1000;

/** A phone that hit its send limit waits this long before its next send, doubling while it keeps hitting it, up to an hour. */
const LIMITED_FIRST_MS = 60_000;
const LIMITED_MAX_MS = 3_600_000;
/** A phone's hourly budget counts its sends in any such window. */
export const HOUR_MS = 3_600_000;

export function createScheduler(options: SchedulerOptions) {
  const now = options.now ?? wallClock;
  const all = bucket(options.requestsPerSecond, options.requestBurst, now());
  const perKey = new Map<string, Bucket>();
  const turns = createTurns();
  const ready = new Map<string, number>();
  const backoffs: Backoffs = new Map();
  const polls: Polls = { last: now(), owed: false };
  const keyBucket = (apiKey: string, t: number): Bucket => perKey.get(apiKey) ?? perKey.set(apiKey, keyBudget(options, apiKey, t)).get(apiKey)!;

  return {
    /** 0 when a send may go now (its tokens taken); else the ms until one may (nothing taken). */
    trySend(apiKey: string, locationId: string): number {
      const t = now();
      const key = keyBucket(apiKey, t);
      const wait = sendWait(all, key, polls, t) || (key.tokens < 2 && turns.yields(apiKey, locationId, t) ? Math.ceil(1000 / key.perSecond) : 0);
      if (wait > 0) {
        turns.waited(apiKey, locationId, t);
        ready.set(locationId, t + wait);
        return wait;
      }
      takeSend(all, key, t);
      turns.took(apiKey, locationId, t);
      ready.delete(locationId);
      return 0;
    },
    /**
     * Gives back what trySend took for a send that did not go (giveBack, below): the
     * location is ready again in `waitMs`, and keeps its turn as if it had not been served.
     */
    giveBack(apiKey: string, locationId: string, waitMs: number): void {
      turns.givenBack(apiKey, locationId, now(), waitMs > 0);
      giveBack(all, keyBucket(apiKey, now()), ready, locationId, waitMs > 0 ? now() + waitMs : 0);
    },
    /**
     * 0 when a receipt poll may go now (its token taken); else the ms until one may.
     * Polls leave a third of the process's burst to sends: sends come first, but a poll
     * goes at least once every READ_FLOOR_MS with one token, which sends then leave it.
     * A phone's key (its own budget): its reads ask the phone, not Cast, and take nothing.
     */
    tryPoll(apiKey?: string): number {
      return apiKey !== undefined && keyBucket(apiKey, now()).own ? 0 : tryPoll(polls, all, options.requestBurst, now());
    },
    /** The lowest priority (tryLowest, below): 0 when a call no message waits on may go now, else the ms until it may. */
    tryLowest: (apiKey?: string): number => tryLowest(polls, all, options.requestBurst, now(), apiKey === undefined ? undefined : keyBucket(apiKey, now())),
    /** The gateway answered 429: nothing more on this key (or at all, without one) for `ms`. */
    slowDown(apiKey: string | undefined, ms: number): void {
      const b = apiKey === undefined ? all : keyBucket(apiKey, now());
      b.pausedUntil = Math.max(b.pausedUntil, now() + ms);
    },
    /** A phone's sends of the last hour as the store holds them, the oldest first, counted in its hour (seedHour, below). */
    seedHour: (apiKey: string, sent: readonly number[]): void => seedHour(keyBucket(apiKey, now()).own, sent),
    /** The key's sender hit its send limit (a phone's RESULT_ERROR_LIMIT_EXCEEDED): the ms it now waits (backOff). */
    limited: (apiKey: string): number => backOff(keyBucket(apiKey, now()), backoffs, apiKey, now(), options.limitedMs ?? LIMITED_FIRST_MS),
    /** When the location last got a send slot (0: never). */
    lastServed: turns.lastServed,
    /** Before this, the location's next send would only be told to wait (0: no such hint). */
    readyAt: (locationId: string): number => ready.get(locationId) ?? 0,
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;

/** The ms until a send may go on `key` (0: now): the process's budget (a poll owed its token left) or a phone's hour, and the key's. */
function sendWait(all: Bucket, key: Bucket, polls: Polls, t: number): number {
  const leave = polls.owed && t - polls.last >= READ_FLOOR_MS ? 1 : 0;
  return Math.max(key.own ? hourWait(key.own, t) : waitFor(all, t, 1 + leave), waitFor(key, t));
}

/** A send's tokens taken: the key's, and the process's (a Cast key's) or a phone's hourly count. */
function takeSend(all: Bucket, key: Bucket, t: number): void {
  if (!key.own) all.tokens -= 1;
  key.own?.sent.push(t);
  key.tokens -= 1;
}

/**
 * The tokens trySend took for a send that did not go, given back: the key's shared budget
 * had none (delivery/send-budget.ts), so the send takes every budget or none. The
 * location's next send is told to wait until `readyAt` (0: no such hint).
 */
function giveBack(all: Bucket, key: Bucket, ready: Map<string, number>, locationId: string, readyAt: number): void {
  if (!key.own) all.tokens = Math.min(all.burst, all.tokens + 1);
  key.own?.sent.pop();
  key.tokens = Math.min(key.burst, key.tokens + 1);
  if (readyAt > 0) ready.set(locationId, readyAt);
}

/** A key's budget: a phone's own (ownBudget), else Cast's per-key one. */
function keyBudget(options: SchedulerOptions, apiKey: string, t: number): Bucket {
  const own = options.ownBudget?.(apiKey);
  if (own) return { ...bucket(own.perSecond, own.burst, t), own: { perHour: own.perHour ?? Infinity, sent: [] } };
  return bucket(options.messagesPerSecond, options.messageBurst ?? options.messagesPerSecond, t);
}

/** When a receipt poll last went; `owed`: one was refused though none went for READ_FLOOR_MS, so sends leave it a token. */
interface Polls {
  last: number;
  owed: boolean;
}

function tryPoll(polls: Polls, all: Bucket, requestBurst: number, t: number): number {
  const due = t - polls.last >= READ_FLOOR_MS;
  const wait = waitFor(all, t, due ? 1 : 1 + Math.floor(requestBurst / 3));
  if (wait > 0) {
    polls.owed = due;
    return due ? wait : Math.min(wait, Math.max(polls.last + READ_FLOOR_MS - t, all.pausedUntil - t));
  }
  all.tokens -= 1;
  polls.last = t;
  polls.owed = false;
  return 0;
}

/**
 * The lowest priority, for calls no message waits on (the settings page's). A Cast call
 * takes a token of the process's budget only while half its burst is left for sends and
 * polls, and never while a poll is owed one. A phone's call (`key` its bucket) sends no
 * SMS and takes nothing, but goes only while the bucket is full: no send of it waits.
 */
function tryLowest(polls: Polls, all: Bucket, requestBurst: number, t: number, key?: Bucket): number {
  if (key?.own) return waitFor(key, t, key.burst);
  const wait = waitFor(all, t, 1 + Math.ceil(requestBurst / 2));
  if (wait > 0 || polls.owed) return Math.max(wait, polls.owed ? READ_FLOOR_MS : 0);
  all.tokens -= 1;
  return 0;
}

interface Bucket {
  perSecond: number;
  burst: number;
  tokens: number;
  at: number;
  pausedUntil: number;
  /** A phone's: apart from Cast's process-wide budget, with its hourly budget. */
  own?: OwnBudget;
}

interface OwnBudget {
  perHour: number;
  /** When its sends of the last hour went, oldest first. */
  sent: number[];
}

/** Each key's last wait after its send limit was hit, and when. */
type Backoffs = Map<string, { ms: number; at: number }>;

/**
 * Nothing more on the key for a while, doubling while the limit keeps being hit (a hit
 * while it still waits is the same hit), back to the first wait once it went twice as
 * long without one. The ms it waits.
 */
function backOff(b: Bucket, backoffs: Backoffs, apiKey: string, t: number, firstMs: number): number {
  if (t < b.pausedUntil) return b.pausedUntil - t;
  const last = backoffs.get(apiKey) ?? { ms: 0, at: 0 };
  const ms = t - last.at > 2 * last.ms ? firstMs : Math.min(2 * last.ms, LIMITED_MAX_MS);
  backoffs.set(apiKey, { ms, at: t });
  b.pausedUntil = t + ms;
  return ms;
}

/**
 * A phone's sends of the last hour as the store holds them (`sent`, the oldest first), when
 * this server starts sending through it: they count in its hourly budget, kept instead of
 * this server's own count only when they are more. A key without an hour (Cast's): nothing.
 */
function seedHour(own: OwnBudget | undefined, sent: readonly number[]): void {
  if (own && sent.length > own.sent.length) own.sent = [...sent];
}

/** The ms until the key has sent fewer than its hourly budget in the last hour (0: it has). */
function hourWait(own: OwnBudget, t: number): number {
  while (own.sent.length > 0 && own.sent[0]! <= t - HOUR_MS) own.sent.shift();
  if (own.sent.length < own.perHour) return 0;
  return own.sent[own.sent.length - own.perHour]! + HOUR_MS - t;
}

function bucket(perSecond: number, burst: number, t: number): Bucket {
  return { perSecond, burst, tokens: burst, at: t, pausedUntil: 0 };
}

/** Refills `b` up to `t`; the ms until it holds `need` tokens (0: it does). */
function waitFor(b: Bucket, t: number, need = 1): number {
  b.tokens = Math.min(b.burst, b.tokens + ((t - b.at) * b.perSecond) / 1000);
  b.at = t;
  const paused = Math.max(0, b.pausedUntil - t);
  return Math.max(paused, b.tokens >= need ? 0 : Math.ceil(((need - b.tokens) * 1000) / b.perSecond));
}
