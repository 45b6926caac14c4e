import { verify, type KeyObject } from "node:crypto";

/** Header names HighLevel signs with, most current first. */
export const SIGNATURE_HEADERS = ["x-ghl-signature", "x-wh-signature"] as const;

/**
 * True when any signature header verifies over the raw body under any configured
 * key. Fails closed: no header, "N/A", a bad encoding or an unknown key type is false.
 * Verification runs on libuv's thread pool, so the event loop keeps taking requests.
 */
export async function verifyWebhook(
  rawBody: Uint8Array,
  signatures: (string | null | undefined)[],
  keys: KeyObject[],
): Promise<boolean> {
  for (const header of signatures) {
    const value = header?.trim();
    if (!value || value === "N/A") continue;
    const signature = Buffer.from(value, "base64");
    if (signature.length === 0) continue;
    for (const key of keys) if (await verifyWith(key, rawBody, signature)) return true;
  }
  return false;
}

function verifyWith(key: KeyObject, body: Uint8Array, signature: Buffer): Promise<boolean> {
  const params = paramsFor(key);
  if (!params) return Promise.resolve(false);
  return new Promise((resolve) => {
    try {
      verify(params.algorithm, body, params.key, signature, (error, valid) => resolve(!error && valid));
    } catch {
      resolve(false); // a malformed signature is just a wrong one
    }
  });
}

function paramsFor(key: KeyObject) {
  switch (key.asymmetricKeyType) {
    case "ed25519":
      return { algorithm: null, key };
    case "ec": // the spec's ECDSA: P-256 / SHA-256, DER-encoded signature
      return { algorithm: "sha256", key: { key, dsaEncoding: "der" as const } };
    case "rsa": // HighLevel's legacy x-wh-signature: PKCS#1 v1.5 / SHA-256
      return { algorithm: "sha256", key };
    default:
      return undefined;
  }
}
