// Signed HighLevel webhooks. One Ed25519 key pair per benchmark run: bridge gets the
// public half as CRM_WEBHOOK_PUBLIC_KEY, the load generator signs with the private one.
import { generateKeyPairSync, sign } from "node:crypto";
import { performance } from "node:perf_hooks";

export const LOCATION_ID = "loc-bench";

const keys = generateKeyPairSync("ed25519");
export const PUBLIC_KEY_PEM = keys.publicKey.export({ type: "spki", format: "pem" }).toString();

export function signRaw(raw) {
  return sign(null, Buffer.from(raw), keys.privateKey).toString("base64");
}

/** The text bridge will send for `messageId`: unique, so the gateway can tie each SMS to its webhook. */
export const textOf = (messageId) => `bench ${messageId}`;

/** A ProviderOutboundMessage body, as HighLevel sends it, serialized. */
export function outboundRaw(messageId) {
  return JSON.stringify({
    type: "SMS",
    locationId: LOCATION_ID,
    messageId,
    contactId: "contact-bench",
    phone: "+639171234567",
    message: textOf(messageId),
    attachments: [],
    userId: "user-bench",
  });
}

/**
 * An autocannon request whose setupRequest makes a new body with a unique messageId
 * and its signature for every request: the signing cost is on the client side, the
 * same for bridge and for the bare baseline, and bridge never sees a duplicate.
 */
export function signedWebhookRequest(prefix) {
  let n = 0;
  return {
    method: "POST",
    path: "/webhooks/crm",
    headers: { "content-type": "application/json" },
    setupRequest(req) {
      const raw = outboundRaw(`${prefix}-${++n}`);
      return { ...req, body: raw, headers: { ...req.headers, "x-ghl-signature": signRaw(raw) } };
    },
  };
}

/**
 * POSTs one signed webhook with fetch. `at` is when the answer's head arrived: the
 * moment HighLevel would consider the message handed over.
 */
export async function postWebhook(baseUrl, messageId) {
  const raw = outboundRaw(messageId);
  const res = await fetch(`${baseUrl}/webhooks/crm`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-ghl-signature": signRaw(raw) },
    body: raw,
  });
  const at = performance.now();
  await res.arrayBuffer(); // free the connection for the next request
  return { status: res.status, at };
}
