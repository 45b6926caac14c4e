import { expect, test } from "vitest";
import { createFailureThrottle } from "../../src/server/throttle.ts";

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

test("fail counts the failures in the window, this one included", () => {
  let now = 0;
  const throttle = createFailureThrottle({ limit: 2, windowMs: 60_000, now: () => now });
  expect(throttle.fail("a")).toBe(1);
  now += 30_000;
  expect(throttle.fail("a")).toBe(2);
  expect(throttle.fail("b")).toBe(1);
  now += 30_000; // the first failure of "a" has left the window
  expect(throttle.fail("a")).toBe(2);
});

test("memory stays bounded under many addresses", () => {
  const throttle = createFailureThrottle({ limit: 1, windowMs: 60_000, now: () => 0, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) throttle.fail(`10.0.${i >> 8}.${i & 255}`);
  expect(throttle.blockedFor("10.0.3.231")).toBeGreaterThan(0); // the newest is kept
  expect(throttle.blockedFor("10.0.0.0")).toBe(0); // the oldest was forgotten
});
