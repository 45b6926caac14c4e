import { expect, test } from "vitest";
import { createBodyBudget } from "../../src/server/body.ts";

test("a lease grows to cover what it is asked for, never past the total, and gives all back once", () => {
  const budget = createBodyBudget(100);
  const a = budget.lease();
  const b = budget.lease();
  expect(a.cover(60)).toBe(true);
  expect(a.cover(40)).toBe(true); // already covered: nothing more taken
  expect(budget.used).toBe(60);
  expect(b.cover(41)).toBe(false); // refused whole: nothing taken
  expect(budget.used).toBe(60);
  expect(b.cover(40)).toBe(true);
  expect(a.cover(61)).toBe(false);
  expect(budget.used).toBe(100);
  a.release();
  a.release();
  expect(budget.used).toBe(40);
  expect(a.cover(Number.NaN)).toBe(true); // an unreadable length takes nothing; the bytes are counted as they come
  b.release();
  expect(budget.used).toBe(0);
});
