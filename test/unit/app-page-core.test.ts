import { expect, test } from "vitest";
import { createPageCalls } from "../../src/core/app/page-calls.ts";
import { createSessions } from "../../src/core/app/sessions.ts";
import { manilaMonth } from "../../src/core/app/usage.ts";
import { AppError } from "../../src/errors.ts";

test.each([
  ["2026-03-31T15:59:59.999Z", "2026-03", "2026-02-28T16:00:00.000Z"],
  ["2026-03-31T16:00:00.000Z", "2026-04", "2026-03-31T16:00:00.000Z"],
  ["2026-12-31T16:00:00.000Z", "2027-01", "2026-12-31T16:00:00.000Z"],
  ["2026-01-01T00:00:00.000Z", "2026-01", "2025-12-31T16:00:00.000Z"],
])("the month in Manila at %s is %s, begun at %s", (at, month, since) => {
  expect(manilaMonth(Date.parse(at))).toEqual({ month, since: Date.parse(since) });
});

test("the page's calls: one remote call per name while it is kept, shared by callers at once, and none without a turn", async () => {
  let clock = 0;
  let turns = 0;
  const calls = createPageCalls({ tryLowest: () => (turns-- > 0 ? 0 : 5000), now: () => clock });
  let asked = 0;
  const ask = () => calls.cached("sender-ids k", async () => ++asked);
  await expect(ask()).rejects.toMatchObject({ code: "BUSY", retryAfterMs: 5000 });
  turns = 1;
  expect(await Promise.all([ask(), ask(), ask()])).toEqual([1, 1, 1]);
  clock += 59_999;
  expect(await ask()).toBe(1);
  clock += 1;
  await expect(ask()).rejects.toBeInstanceOf(AppError);
  expect(asked).toBe(1);
});

test("sessions: a user signing in again replaces only their own token, and a full table signs nobody out", async () => {
  const sessions = createSessions(() => 0, async () => true, 2);
  const first = sessions.open({ locationId: "loc-1", userId: "a", role: "admin" })!;
  const other = sessions.open({ locationId: "loc-1", userId: "b", role: "user" })!;
  const again = sessions.open({ locationId: "loc-1", userId: "a", role: "admin" })!;
  expect(await sessions.get(first.token)).toBeUndefined();
  expect(await sessions.get(again.token)).toMatchObject({ userId: "a" });
  expect(sessions.open({ locationId: "loc-1", userId: "c", role: "user" })).toBeUndefined();
  expect(await sessions.get(other.token)).toMatchObject({ userId: "b" });
  expect(await sessions.get(again.token)).toMatchObject({ userId: "a" });
});
