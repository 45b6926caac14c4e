import { createHash, timingSafeEqual } from "node:crypto";
import type { H3Event } from "h3";
import type { ResolvedConfig } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { createFailureThrottle } from "./throttle.ts";
import { httpError } from "./http-error.ts";
import { addressGroup, createClientAddress } from "./client.ts";

/** Wrong keys a client may send per window before its wrong keys get 429. */
const LIMIT = 10;
const WINDOW_MS = 60_000;
/** Failure lines per window from all clients together, so a flood cannot fill the disk. */
const LOG_LIMIT = 100;

export interface AdminAuthDeps {
  config: Pick<ResolvedConfig, "inboundApiKeys" | "trustProxy" | "trustedProxies">;
  log: Logger;
  now: () => number;
}

/**
 * The bearer INBOUND_API_KEY check of the admin API: returns when the request may
 * go on, throws its 503, 401 or 429 otherwise. An unset key disables the admin API
 * (503) rather than leaving it open.
 *
 * The key is checked before the failure throttle: the right key is never refused, so
 * nobody can lock the operator out by sending wrong keys from their address (or from
 * the proxy's, for every client behind it). A wrong or missing key gets 429 while its
 * client is over the limit, 401 otherwise. The 429 does not bound guessing (a guess
 * that hits still gets 200); the key's length does: INBOUND_API_KEY is at least
 * 24 characters.
 */
export function createAdminAuth({ config, log, now }: AdminAuthDeps): (event: H3Event) => void {
  const digests = config.inboundApiKeys.map(digest);
  const clientOf = createClientAddress(config);
  const throttle = createFailureThrottle({ limit: LIMIT, windowMs: WINDOW_MS, now });
  const mayLog = createLogBudget(LOG_LIMIT, WINDOW_MS, now, () =>
    log.warn(`more than ${LOG_LIMIT} failed admin logins within ${WINDOW_MS / 1000} s: the rest of them are not logged`),
  );

  /**
   * A failure's warn line: the client, the path and why, never the key presented (not
   * even a prefix: a near miss would tell a reader of the log most of the real key).
   * A client's 429s are not logged; the line of its last allowed failure says so.
   */
  function report(event: H3Event, client: string, reason: string, failures: number): void {
    if (!mayLog()) return;
    const path = JSON.stringify(event.url.pathname.slice(0, 200));
    const over = failures >= LIMIT ? ` (${failures} failures within ${WINDOW_MS / 1000} s: its wrong keys now get 429, not logged)` : "";
    log.warn(`admin auth failed from ${client}: ${reason} on ${event.req.method} ${path}${over}`);
  }

  return (event) => {
    if (digests.length === 0) throw httpError(503, "admin API disabled: INBOUND_API_KEY is not set");
    const presented = bearer(event.req.headers.get("authorization"));
    if (presented.key !== undefined && isOneOf(presented.key, digests)) return;

    const client = clientOf(event);
    // An IPv6 client holds a whole /64: counted per address, it would get a fresh
    // share of wrong keys with every address it picks from its own network.
    const group = addressGroup(client);
    const wait = throttle.blockedFor(group);
    if (wait > 0) {
      throw httpError(429, "too many failed authentication attempts; retry later", {
        "retry-after": String(Math.ceil(wait / 1000)),
      });
    }
    report(event, client, presented.key === undefined ? presented.reason : "wrong key", throttle.fail(group));
    throw httpError(401, "unauthorized", { "www-authenticate": "Bearer" });
  };
}

/**
 * A constant-time check of an `Authorization: Bearer <key>` header against `keys`,
 * for bearers that need no failure throttle (GET /metrics: read-only, its token as
 * long as the admin key).
 */
export function bearerCheck(keys: readonly string[]): (header: string | null) => boolean {
  const digests = keys.map(digest);
  return (header) => {
    const { key } = bearer(header);
    return key !== undefined && digests.length > 0 && isOneOf(key, digests);
  };
}

/**
 * At most `limit` lines per window (a fixed one, from the first line); the first line
 * refused calls `exceeded`, once per window.
 */
export function createLogBudget(limit: number, windowMs: number, now: () => number, exceeded: () => void): () => boolean {
  let start = Number.NEGATIVE_INFINITY;
  let lines = 0;
  return () => {
    if (now() - start >= windowMs) {
      start = now();
      lines = 0;
    }
    lines++;
    if (lines === limit + 1) exceeded();
    return lines <= limit;
  };
}

/** The key of an `Authorization: Bearer <key>` header, or why there is none. */
function bearer(header: string | null): { key: string; reason?: never } | { key?: never; reason: string } {
  if (header === null) return { reason: "no Authorization header" };
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1] ? { key: match[1] } : { reason: "malformed Authorization header (not Bearer <key>)" };
}

/** Compares with every key, whichever matches, so the time taken tells nothing either. */
function isOneOf(given: string, digests: readonly Buffer[]): boolean {
  const a = digest(given);
  let found = false;
  for (const b of digests) found = timingSafeEqual(a, b) || found;
  return found;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
