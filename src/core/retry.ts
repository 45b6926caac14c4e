import { setTimeout as sleep } from "node:timers/promises";
import { AppError } from "../errors.ts";

export { sleep };

/** Our transport's error code for a connection not made in time (clients/transport.ts). */
export const CONNECT_TIMEOUT_CODE = "BRIDGE_CONNECT_TIMEOUT";

/** Error codes that mean the connection was never made, so the request never left. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  CONNECT_TIMEOUT_CODE,
]);

/** True when the error proves the request never reached the remote: safe to retry. */
export function neverSent(error: unknown): boolean {
  return causes(error).some((e) => typeof e.code === "string" && NOT_SENT_CODES.has(e.code));
}

/** A back-off: the first wait, doubling up to `maxMs`; `tries`, when bounded: how many in all. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
  tries?: number;
}

/**
 * Every retry bridge makes, in one place. Tests shorten a first wait through Tuning;
 * the shape of each stays here.
 */
export const RETRY = {
  /** A send without a clear answer (or a 429: at least its Retry-After), again with the same idempotency key, until SMS_HOLD_MAX. */
  send: { firstMs: 1000, maxMs: 60_000 },
  /** Within one send: a connection never made (nothing was sent). A 429 waits in the queue instead. */
  gatewayCall: { firstMs: 1000, maxMs: 60_000, tries: 5 },
  /** HighLevel's 429 ("100 requests per 10 s"), honouring its Retry-After. */
  crmRateLimit: { firstMs: 1000, maxMs: 60_000, tries: 6 },
  /** A status report is idempotent: tried for about a day (~23.5 h), so a CRM outage loses none. */
  report: { firstMs: 1000, maxMs: 10 * 60_000, tries: 150 },
  /** A send's result the database refused: until it is stored, as nothing else would pick it up. */
  storeResult: { firstMs: 100, maxMs: 30_000 },
  /** A refreshed token pair the database refused: a few seconds, then the refresh fails. */
  storeToken: { firstMs: 250, maxMs: 30_000, tries: 5 },
  /** A job that threw (the database refused a write, say): it pauses instead of running again at once. */
  job: { firstMs: 1000, maxMs: 60_000 },
  /** An alert the webhook did not take (or a 429: at least its Retry-After): until it does, as it is kept until then. */
  alert: { firstMs: 5_000, maxMs: 10 * 60_000 },
} as const satisfies Record<string, Backoff>;

/** The wait before retry number `retry` of `policy`; `firstMs` overrides the policy's (tests). */
export function delayMs(policy: Backoff, retry: number, firstMs = policy.firstMs): number {
  return backoffMs(firstMs, retry, policy.maxMs);
}

/** p-retry's options for `policy`. */
export function pRetryOptions(policy: Backoff, firstMs = policy.firstMs): { retries: number; minTimeout: number; maxTimeout: number } {
  return { retries: policy.tries === undefined ? Infinity : policy.tries - 1, minTimeout: firstMs, maxTimeout: policy.maxMs };
}

/** The wait before retry number `retry` (0 = the first): `firstMs`, doubling, at most `maxMs`. */
export function backoffMs(firstMs: number, retry: number, maxMs = 60_000): number {
  return Math.min(firstMs * 2 ** retry, maxMs);
}

/**
 * p-retry's `onFailedAttempt` for a remote that sends Retry-After (HighLevel's 429s):
 * waits what the remote asked beyond p-retry's own back-off, which follows it, and only
 * when another try follows, so the last 429 is not waited out for nothing.
 */
export async function waitAsRemoteAsked(context: { error: unknown; retriesLeft: number; retryDelay: number }): Promise<void> {
  const asked = context.error instanceof AppError ? context.error.retryAfterMs : undefined;
  if (asked && context.retriesLeft > 0) await sleep(Math.max(0, asked - context.retryDelay));
}

/** True when the error is our own request timeout firing. */
export function timedOut(error: unknown): boolean {
  return causes(error).some((e) => e.name === "TimeoutError");
}

/**
 * Milliseconds a Retry-After header asks us to wait (delta-seconds or an HTTP date),
 * clamped to [0, maxMs]; undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | null | undefined, now: number, maxMs = 60_000): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  // RFC 9110: whole seconds, or an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"). Seconds with
  // a fraction ("1.5") are read as seconds too: Date.parse would take them for a date of 2001.
  const ms = /^\d+(\.\d+)?$/.test(value) ? Math.ceil(Number(value) * 1000) : /[a-z]/i.test(value) ? Date.parse(value) - now : NaN;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), maxMs);
}

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  cause?: unknown;
}

function causes(error: unknown): ErrorLike[] {
  const chain: ErrorLike[] = [];
  let current: unknown = error;
  while (current && typeof current === "object" && chain.length < 8) {
    chain.push(current as ErrorLike);
    current = (current as ErrorLike).cause;
  }
  return chain;
}
