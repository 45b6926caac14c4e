import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { describe, expect, test } from "vitest";
import { verifyWebhook } from "../../src/core/signature.ts";

const body = Buffer.from(JSON.stringify({ type: "SMS", locationId: "loc-1", messageId: "m-1", message: "hello" }));
const tampered = Buffer.from(body.toString().replace("hello", "hellO"));

const ed = generateKeyPairSync("ed25519");
const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const otherEd = generateKeyPairSync("ed25519");
const otherEc = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const otherRsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const x25519 = generateKeyPairSync("x25519");

const b64 = (signature: Buffer) => signature.toString("base64");
const edSig = b64(sign(null, body, ed.privateKey));
const ecSig = b64(sign("sha256", body, ec.privateKey)); // DER, node's default for EC
const ecP1363Sig = b64(sign("sha256", body, { key: ec.privateKey, dsaEncoding: "ieee-p1363" }));
const rsaSig = b64(sign("sha256", body, rsa.privateKey));
const allKeys = [ed.publicKey, ec.publicKey, rsa.publicKey];

describe("valid signatures verify", () => {
  test.each<[string, string, KeyObject[]]>([
    ["Ed25519 alone", edSig, [ed.publicKey]],
    ["EC P-256 (DER) alone", ecSig, [ec.publicKey]],
    ["RSA-2048 PKCS#1 v1.5 alone", rsaSig, [rsa.publicKey]],
    ["Ed25519 among all keys", edSig, allKeys],
    ["EC among all keys", ecSig, allKeys],
    ["RSA among all keys", rsaSig, allKeys],
    ["Ed25519 after an unsupported x25519 key", edSig, [x25519.publicKey, ed.publicKey]],
    ["Ed25519 with surrounding whitespace", ` ${edSig}\n`, [ed.publicKey]],
  ])("%s", async (_, signature, keys) => {
    await expect(verifyWebhook(body, [signature], keys)).resolves.toBe(true);
  });

  test.each<[string, (string | null | undefined)[]]>([
    ["first header N/A, second valid", ["N/A", rsaSig]],
    ["first header missing, second valid", [undefined, rsaSig]],
    ["first header null, second valid", [null, edSig]],
    ["first header empty, second valid", ["", ecSig]],
    ["first header a wrong signature, second valid", [b64(sign(null, body, otherEd.privateKey)), edSig]],
  ])("%s", async (_, signatures) => {
    await expect(verifyWebhook(body, signatures, allKeys)).resolves.toBe(true);
  });
});

describe("everything else is refused, without throwing", () => {
  test.each<[string, Uint8Array, (string | null | undefined)[], KeyObject[]]>([
    ["no headers", body, [], allKeys],
    ["both headers absent", body, [undefined, null], allKeys],
    ["empty string", body, [""], allKeys],
    ["whitespace only", body, ["   "], allKeys],
    ["N/A", body, ["N/A"], allKeys],
    ["N/A twice", body, ["N/A", "N/A"], allKeys],
    ["Ed25519 under the wrong key", body, [edSig], [otherEd.publicKey]],
    ["EC under the wrong key", body, [ecSig], [otherEc.publicKey]],
    ["RSA under the wrong key", body, [rsaSig], [otherRsa.publicKey]],
    ["Ed25519 signature checked with an RSA key", body, [edSig], [rsa.publicKey]],
    ["Ed25519 over a tampered body", tampered, [edSig], allKeys],
    ["EC over a tampered body", tampered, [ecSig], allKeys],
    ["RSA over a tampered body", tampered, [rsaSig], allKeys],
    ["Ed25519 over an empty body", new Uint8Array(), [edSig], allKeys],
    ["truncated Ed25519 signature", body, [truncate(edSig)], allKeys],
    ["truncated EC signature", body, [truncate(ecSig)], allKeys],
    ["truncated RSA signature", body, [truncate(rsaSig)], allKeys],
    ["one flipped byte in the RSA signature", body, [flip(rsaSig)], allKeys],
    ["EC signature in IEEE P1363 encoding (the contract says DER)", body, [ecP1363Sig], [ec.publicKey]],
    ["non-base64 garbage", body, ["!!!not*a*signature%%%"], allKeys],
    ["base64 of plain text", body, [Buffer.from("hello world").toString("base64")], allKeys],
    ["a valid signature but no keys", body, [edSig, ecSig, rsaSig], []],
    ["only an unsupported x25519 key", body, [edSig, ecSig, rsaSig], [x25519.publicKey]],
  ])("%s", async (_, payload, signatures, keys) => {
    // Resolves false: never throws, never rejects.
    await expect(verifyWebhook(payload, signatures, keys)).resolves.toBe(false);
  });
});

/** Drops the last byte of a base64 signature. */
function truncate(signature: string): string {
  const raw = Buffer.from(signature, "base64");
  return raw.subarray(0, raw.length - 1).toString("base64");
}

function flip(signature: string): string {
  const raw = Buffer.from(signature, "base64");
  raw[10] = (raw[10] ?? 0) ^ 0xff;
  return raw.toString("base64");
}
