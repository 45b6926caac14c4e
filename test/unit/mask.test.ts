import { describe, expect, test } from "vitest";
import { maskPhone, maskSecret } from "../../src/core/mask.ts";

const twelve = "abcdefghijkl";
const twentySix = "abcdefghijklmnopqrstuvwxyz";

describe("maskSecret", () => {
  test.each([
    ["", ""],
    ["abc", "abc..."],
    [twelve, `${twelve}...`],
    ["abcdefghijklm", "abcdefghijkl..."],
    [twentySix, "abcdefghijkl..."],
    ["sk_live_0123456789abcdef", "sk_live_0123..."],
  ])("%j → %j", (secret, masked) => {
    expect(maskSecret(secret)).toBe(masked);
  });

  test.each([twelve, twentySix, "x".repeat(200)])("never shows more than 12 characters of %j", (secret) => {
    expect(maskSecret(secret).length).toBeLessThanOrEqual(15);
  });
});

describe("maskPhone", () => {
  test.each([
    ["+639171234567", "0917***4567"],
    [" +639171234567 ", "0917***4567"],
    ["+15551234567", "+155***4567"],
    ["09171234567", "0917***4567"],
    ["12345678", "***"],
    ["", "***"],
  ])("%j shows as %j", (phone, shown) => {
    expect(maskPhone(phone)).toBe(shown);
  });
});
