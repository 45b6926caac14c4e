import { verify, type KeyObject } from "node:crypto";

/** Header names HighLevel signs with, most current first. */
export const SIGNATURE_HEADERS = ["x-ghl-signature", "x-wh-signature"] as const;

/**
 * True when any signature header verifies over the raw body under any configured
 * key. Fails closed: no header, "N/A", a bad encoding or an unknown key type is false.
 */
export function verifyWebhook(rawBody: Uint8Array, signatures: (string | null | undefined)[], keys: KeyObject[]): boolean {
  for (const header of signatures) {
    const value = header?.trim();
    if (!value || value === "N/A") continue;
    const signature = Buffer.from(value, "base64");
    if (signature.length === 0) continue;
    if (keys.some((key) => verifyWith(key, rawBody, signature))) return true;
  }
  return false;
}

function verifyWith(key: KeyObject, body: Uint8Array, signature: Buffer): boolean {
  try {
    switch (key.asymmetricKeyType) {
      case "ed25519":
        return verify(null, body, key, signature);
      case "ec": // the spec's ECDSA: P-256 / SHA-256, DER-encoded signature
        return verify("sha256", body, { key, dsaEncoding: "der" }, signature);
      case "rsa": // HighLevel's legacy x-wh-signature: PKCS#1 v1.5 / SHA-256
        return verify("sha256", body, key, signature);
      default:
        return false;
    }
  } catch {
    return false; // a malformed signature is just a wrong one
  }
}
