import { createHmac } from "node:crypto";
import { expect, test } from "vitest";
import { checkPhoneSignature } from "../../src/core/inbound/phone-signature.ts";

// docs/services/android-gateway-api.md: X-Signature = hex HMAC-SHA256 over raw body + X-Timestamp, key = the app's signing key.
const KEY = "signing-key";
const RAW = Buffer.from('{"event":"sms:received"}');
const NOW = 1_750_000_000_000;
const TS = String(NOW / 1000);
const sign = (key: string, ts: string) => createHmac("sha256", key).update(Buffer.concat([RAW, Buffer.from(ts)])).digest("hex");

test.each([
  ["signed, now", sign(KEY, TS), TS, [KEY], "ok"],
  ["upper-case hex", sign(KEY, TS).toUpperCase(), TS, [KEY], "ok"],
  ["one of several keys", sign(KEY, TS), TS, ["other", KEY], "ok"],
  ["4m59s old", sign(KEY, String(NOW / 1000 - 299)), String(NOW / 1000 - 299), [KEY], "ok"],
  ["5m01s old", sign(KEY, String(NOW / 1000 - 301)), String(NOW / 1000 - 301), [KEY], "stale"],
  ["5m01s ahead", sign(KEY, String(NOW / 1000 + 301)), String(NOW / 1000 + 301), [KEY], "stale"],
  ["another key", sign("other", TS), TS, [KEY], "wrong"],
  ["signed over another timestamp", sign(KEY, String(NOW / 1000 - 1)), TS, [KEY], "wrong"],
  ["not hex", "zz", TS, [KEY], "wrong"],
  ["a timestamp that is no number", sign(KEY, TS), "soon", [KEY], "wrong"],
  ["no signature", undefined, TS, [KEY], "unsigned"],
  ["no timestamp", sign(KEY, TS), undefined, [KEY], "unsigned"],
  ["no key for the device", sign(KEY, TS), TS, [], "wrong"],
  ["an empty key is no key", sign("", TS), TS, [""], "wrong"],
] as const)("%s: %s", (_, signature, timestamp, keys, expected) => {
  expect(checkPhoneSignature(RAW, signature, timestamp, keys, NOW)).toBe(expected);
});
