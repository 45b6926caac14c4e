import { createHash, timingSafeEqual } from "node:crypto";
import { getRequestIP, type H3Event } from "h3";
import type { FailureThrottle } from "../core/throttle.ts";
import { httpError } from "./app.ts";

/**
 * Bearer INBOUND_API_KEY check. Both sides are hashed first so the comparison is
 * constant-time whatever the lengths. An unset key disables the admin API (503)
 * rather than leaving it open; repeated failures from one client get 429.
 */
export function requireBearer(event: H3Event, key: string, throttle: FailureThrottle): void {
  if (!key) throw httpError(503, "admin API disabled: INBOUND_API_KEY is not set");
  const client = clientOf(event);
  const wait = throttle.blockedFor(client);
  if (wait > 0) {
    throw httpError(429, "too many failed authentication attempts; retry later", {
      "retry-after": String(Math.ceil(wait / 1000)),
    });
  }
  const header = event.req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (!match?.[1] || !sameSecret(match[1], key)) {
    throttle.fail(client);
    throw httpError(401, "unauthorized", { "www-authenticate": "Bearer" });
  }
  throttle.succeed(client);
}

/**
 * The client failures are counted against. Behind a reverse proxy on this host every
 * request comes from loopback, and one client's failures would lock out everyone; so
 * from loopback the last X-Forwarded-For entry (the one the proxy itself added) names
 * the client. From anywhere else that header could be forged: the socket's address counts.
 */
function clientOf(event: H3Event): string {
  const peer = getRequestIP(event) ?? "unknown";
  const loopback = peer === "::1" || peer.startsWith("127.") || peer.startsWith("::ffff:127.");
  const forwarded = loopback ? event.req.headers.get("x-forwarded-for")?.split(",").at(-1)?.trim() : undefined;
  return forwarded || peer;
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
