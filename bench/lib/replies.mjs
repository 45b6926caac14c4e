// Replies for the inbound phase: POST /api/inbound bodies, as a source other than the
// phone sends them (docs/http.md, "Replies"), each one new.
import { LOCATION_ID } from "./webhooks.mjs";

/** CRM_PROVIDER_ID of the bench's bridge: without one, bridge refuses every reply. */
export const PROVIDER_ID = "provider-bench";

/** A reply's body: its own `id` (so no two are one reply), a sender of its own, the location named. */
export function replyRaw(id, n) {
  return JSON.stringify({ from: `+63917${String(n % 10_000_000).padStart(7, "0")}`, text: `bench reply ${id}`, location_id: LOCATION_ID, id });
}

/** An autocannon request that sends a new reply every time, behind the admin bearer `key`. */
export function replyRequest(prefix, key) {
  let n = 0;
  return {
    method: "POST",
    path: "/api/inbound",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    setupRequest(req) {
      n++;
      return { ...req, body: replyRaw(`${prefix}-${n}`, n) };
    },
  };
}
