import { describe, expect, test } from "vitest";
import { maskSecret } from "../../src/core/mask.ts";

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
