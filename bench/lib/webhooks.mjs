// Signed HighLevel webhooks. One Ed25519 key pair per benchmark run: bridge gets the
// public half as CRM_WEBHOOK_PUBLIC_KEY, the load generator signs with the private one.
import { generateKeyPairSync, sign } from "node:crypto";
import { performance } from "node:perf_hooks";

export const LOCATION_ID = "loc-bench";
/** A second location on the same API key, for the fairness phase. */
export const OTHER_LOCATION_ID = "loc-bench-other";

const keys = generateKeyPairSync("ed25519");
export const PUBLIC_KEY_PEM = keys.publicKey.export({ type: "spki", format: "pem" }).toString();

export function signRaw(raw) {
  return sign(null, Buffer.from(raw), keys.privateKey).toString("base64");
}

/** The text bridge will send for `messageId`: unique, so the gateway can tie each SMS to its webhook. */
export const textOf = (messageId) => `bench ${messageId}`;

/** A ProviderOutboundMessage body, as HighLevel sends it, serialized. */
export function outboundRaw(messageId, locationId = LOCATION_ID) {
  return JSON.stringify({
    type: "SMS",
    locationId,
    messageId,
    contactId: "contact-bench",
    phone: "+639171234567",
    message: textOf(messageId),
    attachments: [],
    userId: "user-bench",
  });
}

/**
 * An autocannon request that sends a new body with a unique messageId and its
 * signature every time, so bridge never sees a duplicate. The first `presigned`
 * bodies are signed before the run: signing costs the load generator ~40 µs of CPU
 * per request, on the same two cores as the servers it measures. `signedOnTheFly()`
 * tells how many had to be signed during the run because the pool ran out.
 */
export function signedWebhookRequest(prefix, presigned = 0) {
  const signed = (n) => {
    const body = outboundRaw(`${prefix}-${n}`);
    return { body, signature: signRaw(body) };
  };
  const pool = Array.from({ length: presigned }, (_, i) => signed(i + 1));
  let n = 0;
  return {
    method: "POST",
    path: "/webhooks/crm",
    headers: { "content-type": "application/json" },
    setupRequest(req) {
      n++;
      const { body, signature } = pool[n - 1] ?? signed(n);
      return { ...req, body, headers: { ...req.headers, "x-ghl-signature": signature } };
    },
    signedOnTheFly: () => Math.max(0, n - presigned),
  };
}

/**
 * POSTs one signed webhook with fetch. `at` is when the answer's head arrived: the
 * moment HighLevel would consider the message handed over.
 */
export async function postWebhook(baseUrl, messageId, locationId = LOCATION_ID) {
  const raw = outboundRaw(messageId, locationId);
  const res = await fetch(`${baseUrl}/webhooks/crm`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-ghl-signature": signRaw(raw) },
    body: raw,
  });
  const at = performance.now();
  await res.arrayBuffer(); // free the connection for the next request
  return { status: res.status, at };
}
