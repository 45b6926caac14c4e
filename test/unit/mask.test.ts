import { describe, expect, test } from "vitest";
import { maskSecret, redact } from "../../src/core/mask.ts";

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

describe("redact", () => {
  test("an empty secret says it is unset", () => {
    expect(redact("")).toBe("(unset)");
  });

  test.each(["a", "abcd", "abcde", twelve, twentySix, "sk_live_0123456789abcdef", "0123456789012345678901234567890"])(
    "%j: no 5 consecutive characters of the secret appear",
    (secret) => {
      const shown = redact(secret);
      for (let i = 0; i + 5 <= secret.length; i++) {
        expect(shown).not.toContain(secret.slice(i, i + 5));
      }
    },
  );

  test("shows at most the first 4 characters", () => {
    expect(redact(twentySix).startsWith("abcd")).toBe(true);
    expect(redact(twentySix)).not.toContain("abcde");
  });
});
