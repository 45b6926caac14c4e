import { createHmac, timingSafeEqual } from "node:crypto";

/** A phone's webhook older or newer than this is refused: a captured one cannot be replayed later. */
export const PHONE_WEBHOOK_MAX_AGE_MS = 5 * 60_000;

/** Why a phone's webhook is refused; "ok": it is signed with one of the keys, and fresh. */
export type PhoneSignatureCheck = "ok" | "unsigned" | "stale" | "wrong";

/**
 * SMS Gateway for Android's webhook signature (docs/services/android-gateway-api.md, "Webhooks"):
 * `X-Signature` is the hex HMAC-SHA256 of the raw body followed by `X-Timestamp` (Unix
 * seconds), keyed with the app's signing key. Compared in constant time, so the answer's
 * timing does not tell how much of a forged signature was right. `keys`: the signing keys
 * of the locations the envelope's device serves.
 */
export function checkPhoneSignature(
  raw: Uint8Array,
  signature: string | null | undefined,
  timestamp: string | null | undefined,
  keys: readonly string[],
  nowMs: number,
): PhoneSignatureCheck {
  if (!signature || !timestamp) return "unsigned";
  if (!/^\d{1,12}$/.test(timestamp)) return "wrong";
  if (Math.abs(nowMs - Number(timestamp) * 1000) > PHONE_WEBHOOK_MAX_AGE_MS) return "stale";
  const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, "hex") : undefined;
  if (!given) return "wrong";
  for (const key of keys) {
    if (!key) continue;
    const expected = createHmac("sha256", key).update(raw).update(timestamp).digest();
    if (timingSafeEqual(expected, given)) return "ok";
  }
  return "wrong";
}
