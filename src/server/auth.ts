import { createHash, timingSafeEqual } from "node:crypto";
import { getRequestIP, type H3Event } from "h3";
import type { ResolvedConfig } from "../core/config.ts";
import type { FailureThrottle } from "../core/throttle.ts";
import { httpError } from "./app.ts";

/**
 * Bearer INBOUND_API_KEY check, against each of its keys (two during a rotation).
 * Both sides are hashed first so each comparison is constant-time whatever the
 * lengths. An unset key disables the admin API (503) rather than leaving it open.
 *
 * The key is checked before the failure throttle: the right key is never refused, so
 * nobody can lock the operator out by sending wrong keys from their address (or from
 * the proxy's, for every client behind it). A wrong or missing key gets 429 while its
 * client is over the limit, 401 otherwise. The 429 does not bound guessing (a guess
 * that hits still gets 200); the key's length does: INBOUND_API_KEY is at least
 * 24 characters.
 */
export function requireBearer(event: H3Event, config: Pick<ResolvedConfig, "inboundApiKeys" | "trustProxy">, throttle: FailureThrottle): void {
  const keys = config.inboundApiKeys;
  if (keys.length === 0) throw httpError(503, "admin API disabled: INBOUND_API_KEY is not set");
  const header = event.req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (match?.[1] && isOneOf(match[1], keys)) return;

  const client = clientKey(getRequestIP(event), event.req.headers.get("x-forwarded-for"), config.trustProxy);
  const wait = throttle.blockedFor(client);
  if (wait > 0) {
    throw httpError(429, "too many failed authentication attempts; retry later", {
      "retry-after": String(Math.ceil(wait / 1000)),
    });
  }
  throttle.fail(client);
  throw httpError(401, "unauthorized", { "www-authenticate": "Bearer" });
}

/**
 * The client failures are counted against: the peer's address, or, when the operator
 * says every request comes through a reverse proxy (TRUST_PROXY), the last
 * X-Forwarded-For entry, the one that proxy added. Trusting the header by default
 * would let anyone pick a fresh key per try, so it is off unless set.
 */
export function clientKey(peer: string | undefined, forwardedFor: string | null, trustProxy: boolean): string {
  const forwarded = trustProxy ? forwardedFor?.split(",").at(-1)?.trim().slice(0, 64) : undefined;
  return forwarded || peer || "unknown";
}

/** Compares with every key, whichever matches, so the time taken tells nothing either. */
function isOneOf(given: string, keys: readonly string[]): boolean {
  const a = digest(given);
  let found = false;
  for (const key of keys) found = timingSafeEqual(a, digest(key)) || found;
  return found;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
