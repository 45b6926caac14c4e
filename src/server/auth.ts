import { createHash, timingSafeEqual } from "node:crypto";
import type { H3Event } from "h3";
import { httpError } from "./app.ts";

/**
 * Bearer INBOUND_API_KEY check. Both sides are hashed first so the comparison is
 * constant-time whatever the lengths. An unset key disables the admin API (503)
 * rather than leaving it open.
 */
export function requireBearer(event: H3Event, key: string): void {
  if (!key) throw httpError(503, "admin API disabled: INBOUND_API_KEY is not set");
  const header = event.req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (!match?.[1] || !sameSecret(match[1], key)) {
    throw httpError(401, "unauthorized", { "www-authenticate": "Bearer" });
  }
}

export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
