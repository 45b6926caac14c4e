import { expect, test } from "vitest";
import { createPageCalls } from "../../src/core/app/page-calls.ts";
import { createSessions } from "../../src/core/app/sessions.ts";
import { openDb } from "../../src/db/index.ts";
import { openStore } from "../../src/store/open.ts";
import { AppError } from "../../src/errors.ts";

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
  const db = openDb(":memory:");
  const sessions = createSessions(openStore({ encryptionKey: undefined }, db).appSessions, () => 0, async () => true, 2);
  const first = (await sessions.open({ locationId: "loc-1", userId: "a", role: "admin" }))!;
  const other = (await sessions.open({ locationId: "loc-1", userId: "b", role: "user" }))!;
  const again = (await sessions.open({ locationId: "loc-1", userId: "a", role: "admin" }))!;
  expect(await sessions.get(first.token)).toBeUndefined();
  expect(await sessions.get(again.token)).toMatchObject({ userId: "a" });
  expect(await sessions.open({ locationId: "loc-1", userId: "c", role: "user" })).toBeUndefined();
  expect(await sessions.get(other.token)).toMatchObject({ userId: "b" });
  expect(await sessions.get(again.token)).toMatchObject({ userId: "a" });
  // Only the tokens' hashes are stored: a read of the database gives no live token.
  const stored = db.prepare("SELECT token_hash FROM app_sessions").pluck().all() as string[];
  expect(stored).not.toContain(again.token);
  expect(stored.every((h) => /^[0-9a-f]{64}$/.test(h))).toBe(true);
  db.close();
});
