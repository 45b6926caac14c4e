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

/** The wait before retry number `retry` (0 = the first): `firstMs`, doubling, at most `maxMs`. */
export function backoffMs(firstMs: number, retry: number, maxMs = 60_000): number {
  return Math.min(firstMs * 2 ** retry, maxMs);
}

/**
 * p-retry's `onFailedAttempt` for remotes that send Retry-After (Cast's and HighLevel's
 * 429s): waits what the remote asked beyond p-retry's own back-off, which follows it,
 * and only when another try follows, so the last 429 is not waited out for nothing.
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
  // RFC 9110: whole seconds, or an HTTP date.
  const ms = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - now;
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
