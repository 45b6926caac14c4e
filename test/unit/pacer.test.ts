import { expect, test } from "vitest";
import { createPacer } from "../../src/core/pacer.ts";

test("the burst goes at once, then one slot per 1/rate, per key", () => {
  let now = 0;
  const pacer = createPacer({ perSecond: 10, burst: 3, now: () => now });
  expect([pacer.delay("a"), pacer.delay("a"), pacer.delay("a")]).toEqual([0, 0, 0]);
  expect(pacer.delay("a")).toBe(100);
  expect(pacer.delay("a")).toBe(200);
  expect(pacer.delay("b")).toBe(0);
  now = 1000; // refilled to the burst, not beyond
  expect([pacer.delay("a"), pacer.delay("a"), pacer.delay("a"), pacer.delay("a")]).toEqual([0, 0, 0, 100]);
});

test("callers that wait their turn go at the rate after the burst", () => {
  let now = 0;
  const pacer = createPacer({ perSecond: 30, burst: 50, now: () => now });
  const sentAt: number[] = [];
  for (let i = 0; i < 350; i++) {
    const start = now;
    sentAt.push(start + pacer.delay("k")); // each caller sleeps its delay, then sends
    now += 1; // the next caller arrives a moment later
  }
  expect(sentAt.slice(0, 50).every((t) => t < 50)).toBe(true);
  // 300 more at 30 a second: the last one 10 s after the burst, not sooner.
  expect(sentAt[349]).toBeGreaterThanOrEqual(10_000);
  expect(sentAt[349]).toBeLessThan(10_100);
});
