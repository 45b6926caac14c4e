import { expect, test } from "vitest";
import { createFailureThrottle } from "../../src/core/throttle.ts";

test("an address is refused after `limit` failures until the oldest leaves the window", () => {
  let now = 1_000_000;
  const throttle = createFailureThrottle({ limit: 3, windowMs: 60_000, now: () => now });
  for (let i = 0; i < 3; i++) {
    expect(throttle.blockedFor("a")).toBe(0);
    throttle.fail("a");
    now += 1000;
  }
  expect(throttle.blockedFor("a")).toBe(57_000);
  expect(throttle.blockedFor("b")).toBe(0);
  now += 57_000;
  expect(throttle.blockedFor("a")).toBe(0);
});

test("a success forgets the failures", () => {
  const throttle = createFailureThrottle({ limit: 2, windowMs: 60_000, now: () => 0 });
  throttle.fail("a");
  throttle.succeed("a");
  throttle.fail("a");
  expect(throttle.blockedFor("a")).toBe(0);
});

test("memory stays bounded under many addresses", () => {
  const throttle = createFailureThrottle({ limit: 1, windowMs: 60_000, now: () => 0, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) throttle.fail(`10.0.${i >> 8}.${i & 255}`);
  expect(throttle.blockedFor("10.0.3.231")).toBeGreaterThan(0); // the newest is kept
  expect(throttle.blockedFor("10.0.0.0")).toBe(0); // the oldest was forgotten
});
