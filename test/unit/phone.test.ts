import { isValidPhoneNumber } from "libphonenumber-js/mobile";
import { describe, expect, test } from "vitest";
import { toE164PH, toLocalPH } from "../../src/core/phone.ts";

describe("toLocalPH", () => {
  test.each([
    ["+639171234567", "09171234567"],
    ["639171234567", "09171234567"],
    ["09171234567", "09171234567"],
    ["+63 917 123 4567", "09171234567"],
    ["(0917) 123-4567", "09171234567"],
    ["  +639171234567  ", "09171234567"],
    ["0917-123-4567", "09171234567"],
  ])("%j is the PH mobile %s", (input, local) => {
    expect(toLocalPH(input)).toBe(local);
  });

  test.each([
    ["+6321234567", "Manila landline"],
    ["+63281234567", "Manila landline (8-digit)"],
    ["+14155552671", "US number"],
    ["+63917123456", "one digit short"],
    ["+639171234567890", "far too long"],
    ["", "empty"],
    ["abc", "letters"],
    ["+63", "country code only"],
    ["+639171234567\n[error] forged", "a line after the number"],
    ["+639171234567\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07", "a clipboard write after the number"],
    ["+63917\t1234567", "a tab inside"],
    ["\u202e+639171234567", "a bidi override"],
    ["+639171234567 call me", "words after the number"],
    ["tel:+639171234567", "a scheme before the number"],
    ["+63 917 123 4567 ext. 2", "an extension"],
  ])("%j (%s) is refused", (input) => {
    expect(toLocalPH(input)).toBeUndefined();
  });
});

describe("toE164PH", () => {
  test.each([
    ["09171234567", "+639171234567"],
    ["+639171234567", "+639171234567"],
    ["639171234567", "+639171234567"],
    ["+63 917 123 4567", "+639171234567"],
    ["(0917) 123-4567", "+639171234567"],
  ])("%j is %s", (input, e164) => {
    expect(toE164PH(input)).toBe(e164);
  });

  test.each(["+6321234567", "+63281234567", "+14155552671", "+63917123456", "", "abc", "+63"])("%j is refused", (input) => {
    expect(toE164PH(input)).toBeUndefined();
  });
});

describe("round trip over generated PH mobiles", () => {
  const prefixes = ["0905", "0917", "0918", "0920", "0947", "0966", "0995", "0999"];
  // A fixed-seed generator keeps the sample reproducible across runs.
  let seed = 0x2f6e2b1;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const numbers = prefixes.flatMap((prefix) =>
    Array.from({ length: 25 }, () => `${prefix}${String(next() % 10_000_000).padStart(7, "0")}`),
  );
  // Only numbers libphonenumber itself calls valid mobiles are a fair test of the round trip.
  const valid = numbers.filter((local) => isValidPhoneNumber(local, "PH"));

  test("the sample is mostly valid mobiles", () => {
    expect(valid.length).toBeGreaterThan(numbers.length / 2);
  });

  test.each(valid)("%s → E.164 → local is the identity", (local) => {
    const e164 = toE164PH(local);
    expect(e164).toBe(`+63${local.slice(1)}`);
    expect(toLocalPH(e164!)).toBe(local);
    expect(toE164PH(e164!)).toBe(e164);
  });
});
