import { randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { createSealer, type SealContext } from "../../src/db/sealer.ts";
import { sealV1 } from "../helpers/sealer.ts";

const KEY = randomBytes(32);
const sealer = createSealer(KEY);
const at = (column: string, row: string, table = "tokens"): SealContext => ({ table, column, row });

describe("seal and open", () => {
  test.each([
    ["a refresh token", "rt-0123456789abcdef", at("refresh_token", "loc-1")],
    ["an API key", "sk_live_0123456789", at("sms_api_key", "AbCdEfGhIj0123456789")],
    ["unicode text", "clé ✓ 键", at("access_token", "loc_2-x")],
    ["a long value", "x".repeat(4000), at("access_token", "loc-3")],
  ])("%s opens where it was sealed", (_, plain, context) => {
    const stored = sealer.seal(plain, context);
    expect(stored).toMatch(/^enc:v2:/);
    expect(stored).not.toContain(plain);
    expect(sealer.open(stored, context)).toBe(plain);
  });

  test.each([
    ["a plain value", () => "plain", true, true],
    ["one sealed with the key", () => sealer.seal("v", at("sms_api_key", "loc-1")), true, false],
    ["one sealed with the key for another place", () => sealer.seal("v", at("sms_api_key", "loc-2")), true, false],
    ["one sealed with another key", () => createSealer(randomBytes(32)).seal("v", at("sms_api_key", "loc-1")), false, false],
    ["an enc:v1 value of the key", () => sealV1("v", KEY), true, false],
    ["an enc:v1 value of another key", () => sealV1("v", randomBytes(32)), false, false],
  ])("fits: %s", (_, stored, withKey, withoutKey) => {
    const value = stored();
    expect(sealer.fits(value)).toBe(withKey);
    expect(createSealer(undefined).fits(value)).toBe(withoutKey);
  });

  test("the same value sealed twice differs (a fresh IV each time)", () => {
    expect(sealer.seal("same", at("sms_api_key", "loc-1"))).not.toBe(sealer.seal("same", at("sms_api_key", "loc-1")));
  });

  test('"" stays "" (it means: use the global default)', () => {
    expect(sealer.seal("", at("sms_api_key", "loc-1"))).toBe("");
    expect(sealer.open("", at("sms_api_key", "loc-1"))).toBe("");
  });

  test.each([
    ["another row", at("refresh_token", "loc-2")],
    ["another column", at("sms_api_key", "loc-1")],
    ["another table", at("refresh_token", "loc-1", "jobs")],
    ["a row whose id only adds to it", at("refresh_token", "loc-10")],
  ])("a value sealed for tokens.refresh_token.loc-1 is refused in %s", (_, elsewhere) => {
    const stored = sealer.seal("rt-secret", at("refresh_token", "loc-1"));
    expect(() => sealer.open(stored, elsewhere)).toThrow(
      `${elsewhere.table}.${elsewhere.column} of ${elsewhere.row}: the stored value was sealed for another row or column, or altered, so it is not used; store it again`,
    );
  });

  test.each([
    ["an altered ciphertext", (s: string) => s.slice(0, -4) + (s.endsWith("AAAA") ? "BBBB" : "AAAA")],
    ["a truncated value", (s: string) => s.slice(0, s.lastIndexOf(":"))],
  ])("%s is refused", (_, alter) => {
    const stored = sealer.seal("rt-secret", at("refresh_token", "loc-1"));
    expect(() => sealer.open(alter(stored), at("refresh_token", "loc-1"))).toThrow("sealed for another row or column, or altered");
  });

  test("a value sealed with another key says so, not that it was moved", () => {
    const stored = createSealer(randomBytes(32)).seal("rt-secret", at("refresh_token", "loc-1"));
    expect(() => sealer.open(stored, at("refresh_token", "loc-1"))).toThrow("tokens.refresh_token of loc-1: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with");
  });

  test("without a key, sealed values are refused and plain ones pass", () => {
    const none = createSealer(undefined);
    expect(none.seal("plain", at("sms_api_key", "loc-1"))).toBe("plain");
    expect(none.open("plain", at("sms_api_key", "loc-1"))).toBe("plain");
    for (const stored of [sealer.seal("x", at("sms_api_key", "loc-1")), sealV1("x", KEY)]) {
      expect(() => none.open(stored, at("sms_api_key", "loc-1"))).toThrow("the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY");
    }
  });

  test("a v1 value (sealed before values were bound) still opens, in any place, with the right key only", () => {
    const stored = sealV1("old-refresh-token", KEY);
    expect(sealer.open(stored, at("refresh_token", "loc-1"))).toBe("old-refresh-token");
    expect(() => createSealer(randomBytes(32)).open(stored, at("refresh_token", "loc-1"))).toThrow("is not the key");
  });

  test("every error is a 503 with code ENCRYPTION_KEY: a job that meets one waits, nothing is lost", () => {
    const stored = sealer.seal("rt-secret", at("refresh_token", "loc-1"));
    expect(() => sealer.open(stored, at("refresh_token", "loc-2"))).toThrow(expect.objectContaining({ code: "ENCRYPTION_KEY", status: 503, reason: "misplaced" }));
  });
});
