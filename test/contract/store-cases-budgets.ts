import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import type { Case } from "./store-cases-registry.ts";

// The store's clock is real time on both stores (PostgreSQL's own; the caller's, passed, on
// SQLite): these cases wait real milliseconds, a few hundred at most.
const now = () => Date.now();

/** The contract's cases of the keys' shared send budgets (store-cases.ts runs them). */
export function budgetCases(it: Case): void {
  it("a key's burst is taken, then the next take is refused with the wait for a token", ["keyBudgets"], async (store) => {
    const taken = [];
    for (let i = 0; i < 3; i++) taken.push(await store.keyBudgets.take("tag-1", 10, 3, now()));
    expect(taken).toEqual([0, 0, 0]);
    const wait = await store.keyBudgets.take("tag-1", 10, 3, now());
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(100);
    // Another key has its own bucket, full.
    expect(await store.keyBudgets.take("tag-2", 10, 3, now())).toBe(0);
  });

  it("a key's bucket refills at its rate, never above its burst", ["keyBudgets"], async (store) => {
    for (let i = 0; i < 2; i++) expect(await store.keyBudgets.take("tag-1", 20, 2, now())).toBe(0);
    const wait = await store.keyBudgets.take("tag-1", 20, 2, now());
    expect(wait).toBeGreaterThan(0);
    await sleep(wait + 20);
    expect(await store.keyBudgets.take("tag-1", 20, 2, now())).toBe(0);
    expect(await store.keyBudgets.take("tag-1", 20, 2, now())).toBeGreaterThan(0);
    // Idle for many times the burst's worth: still only the burst.
    await sleep(250);
    const after = [];
    for (let i = 0; i < 3; i++) after.push(await store.keyBudgets.take("tag-1", 20, 2, now()));
    expect(after.slice(0, 2)).toEqual([0, 0]);
    expect(after[2]).toBeGreaterThan(0);
  });

  it("a token given back (its send did not go) is there for the next take, never above the burst", ["keyBudgets"], async (store) => {
    for (let i = 0; i < 2; i++) expect(await store.keyBudgets.take("tag-1", 1, 2, now())).toBe(0);
    expect(await store.keyBudgets.take("tag-1", 1, 2, now())).toBeGreaterThan(0);
    await store.keyBudgets.giveBack("tag-1", 2, now());
    expect(await store.keyBudgets.take("tag-1", 1, 2, now())).toBe(0);
    expect(await store.keyBudgets.take("tag-1", 1, 2, now())).toBeGreaterThan(0);
    // Given back more often than taken: still only the burst.
    for (let i = 0; i < 4; i++) await store.keyBudgets.giveBack("tag-1", 2, now());
    const after = [];
    for (let i = 0; i < 3; i++) after.push(await store.keyBudgets.take("tag-1", 1, 2, now()));
    expect(after.slice(0, 2)).toEqual([0, 0]);
    expect(after[2]).toBeGreaterThan(0);
  });

  it("a pause on a key holds every taker until it ends, even with tokens left", ["keyBudgets"], async (store) => {
    expect(await store.keyBudgets.take("tag-1", 10, 5, now())).toBe(0);
    await store.keyBudgets.pause("tag-1", 300, now());
    await store.keyBudgets.pause("tag-1", 10, now()); // a shorter pause does not shorten it
    const waits = await Promise.all([1, 2, 3].map(() => store.keyBudgets.take("tag-1", 10, 5, now())));
    for (const wait of waits) {
      expect(wait).toBeGreaterThan(200);
      expect(wait).toBeLessThanOrEqual(300);
    }
    // A key paused before its first send starts empty when the pause ends.
    await store.keyBudgets.pause("tag-2", 50, now());
    expect(await store.keyBudgets.take("tag-2", 10, 5, now())).toBeGreaterThan(0);
    await sleep(Math.max(...waits) + 20);
    expect(await store.keyBudgets.take("tag-1", 10, 5, now())).toBe(0);
  });
}
