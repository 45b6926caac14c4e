import { expect, test } from "vitest";
import { createScheduler } from "../../src/core/delivery/scheduler.ts";

function make(messagesPerSecond = 10, requestsPerSecond = 30, requestBurst = 50) {
  const clock = { t: 1_000_000 };
  const s = createScheduler({ requestsPerSecond, requestBurst, messagesPerSecond, now: () => clock.t });
  return { s, clock };
}

test("a key sends its burst at once, then one message per 1/rate s; nothing is taken while told to wait", () => {
  const { s, clock } = make(10);
  for (let i = 0; i < 10; i++) expect(s.trySend("k", "loc-a")).toBe(0);
  expect(s.trySend("k", "loc-a")).toBe(100);
  expect(s.trySend("k", "loc-a")).toBe(100); // asking again takes nothing
  clock.t += 100;
  expect(s.trySend("k", "loc-a")).toBe(0);
  expect(s.trySend("k", "loc-a")).toBe(100);
});

test("keys have their own message budget, but share the process's request budget", () => {
  const { s } = make(10, 30, 25);
  for (let i = 0; i < 10; i++) expect(s.trySend("k1", "a")).toBe(0);
  for (let i = 0; i < 10; i++) expect(s.trySend("k2", "b")).toBe(0);
  for (let i = 0; i < 5; i++) expect(s.trySend("k3", "c")).toBe(0);
  // k3 still has 5 messages of its own, but the process has spent its burst of 25.
  expect(s.trySend("k3", "c")).toBe(34);
});

test("lastServed and readyAt tell the queue whose turn it is", () => {
  const { s, clock } = make(1);
  expect(s.lastServed("a")).toBe(0);
  expect(s.trySend("k", "a")).toBe(0);
  expect(s.lastServed("a")).toBe(clock.t);
  expect(s.trySend("k", "b")).toBe(1000);
  expect(s.readyAt("b")).toBe(clock.t + 1000);
  clock.t += 1000;
  expect(s.trySend("k", "b")).toBe(0);
  expect(s.readyAt("b")).toBe(0);
});

test("a key's last token goes to the location told to wait for it that was served longest ago, not to the first send that asks", () => {
  const { s, clock } = make(10);
  for (let i = 0; i < 10; i++) expect(s.trySend("k", "campaign")).toBe(0);
  expect(s.trySend("k", "other")).toBe(100);
  clock.t += 100;
  // The campaign's next send asks first, but the other location's turn comes first.
  expect(s.trySend("k", "campaign")).toBe(100);
  expect(s.trySend("k", "other")).toBe(0);
  clock.t += 100;
  expect(s.trySend("k", "campaign")).toBe(0);
});

test("a location told to wait keeps its turn for a second only, and a token given back gives back its turn", () => {
  const { s, clock } = make(1);
  expect(s.trySend("k", "campaign")).toBe(0);
  expect(s.trySend("k", "other")).toBe(1000);
  clock.t += 1000;
  expect(s.trySend("k", "campaign")).toBe(1000);
  clock.t += 1001;
  // The other location did not come back for it: the campaign goes on.
  expect(s.trySend("k", "campaign")).toBe(0);

  clock.t += 1000;
  expect(s.trySend("k", "other")).toBe(0);
  s.giveBack("k", "other", 500); // another budget (the key's shared row) had none
  expect(s.lastServed("other")).toBe(0);
  expect(s.trySend("k", "campaign")).toBe(1000);
  expect(s.trySend("k", "other")).toBe(0);
});

test("a 429 pauses the key it hit for Retry-After", () => {
  const { s, clock } = make(10);
  s.slowDown("k", 2000);
  expect(s.trySend("k", "a")).toBe(2000);
  expect(s.trySend("other", "b")).toBe(0);
  clock.t += 2000;
  expect(s.trySend("k", "a")).toBe(0);
});

test("receipt polls leave a third of the process's burst to sends", () => {
  const { s } = make(100, 30, 30);
  for (let i = 0; i < 20; i++) expect(s.tryPoll()).toBe(0);
  expect(s.tryPoll()).toBeGreaterThan(0); // 10 tokens left: reserved for sends
  for (let i = 0; i < 10; i++) expect(s.trySend("k", "a")).toBe(0);
});

test("sends of four keys at full rate still leave receipt reads one token a second", () => {
  let t = 0;
  // serve's figures for Cast's defaults (index.ts): 30/s * 0.97, burst 48; 10/s * 0.97 a key, burst 9.
  const s = createScheduler({ requestsPerSecond: 29.1, requestBurst: 48, messagesPerSecond: 9.7, messageBurst: 9, now: () => t });
  let sent = 0;
  let polls = 0;
  for (; t < 10 * 60_000; t += 10) {
    for (const key of ["A", "B", "C", "D"]) if (s.trySend(key, `loc-${key}`) === 0) sent++;
    if (s.tryPoll() === 0) polls++;
  }
  expect(polls).toBeGreaterThan(550); // about one a second for 10 minutes
  expect(polls).toBeLessThan(700); // sends still come first
  expect(sent).toBeGreaterThan(16_500); // ~28/s: the process's budget less the reads
});

test("a phone's key keeps its own pace (ANDROID_MESSAGES_PER_MINUTE), apart from Cast's process budget", () => {
  const clock = { t: 1_000_000 };
  const ownBudget = (key: string) => (key.startsWith("android:") ? { perSecond: 20 / 60, burst: 1 } : undefined);
  const s = createScheduler({ requestsPerSecond: 30, requestBurst: 5, messagesPerSecond: 10, ownBudget, now: () => clock.t });
  expect(s.trySend("android:dev-1", "a")).toBe(0);
  expect(s.trySend("android:dev-1", "a")).toBe(3000); // one at a time, 20 a minute
  expect(s.trySend("android:dev-2", "b")).toBe(0); // another phone is its own
  // The phones took nothing of the process's burst of 5: Cast's key still sends all five.
  for (let i = 0; i < 5; i++) expect(s.trySend("cast-key", "c")).toBe(0);
  clock.t += 3000;
  expect(s.trySend("android:dev-1", "a")).toBe(0);
});

test("the lowest priority takes a process token only while half the burst is left to sends, and never a phone's send slot", () => {
  const clock = { t: 1_000_000 };
  const ownBudget = (key: string) => (key.startsWith("android:") ? { perSecond: 0.5, burst: 1 } : undefined);
  const s = createScheduler({ requestsPerSecond: 30, requestBurst: 50, messagesPerSecond: 100, messageBurst: 100, ownBudget, now: () => clock.t });
  let lowest = 0;
  while (s.tryLowest() === 0) lowest++;
  // Of 50 tokens, one goes while more than half are there: 25 taken, and 25 sends still go.
  expect(lowest).toBe(25);
  for (let i = 0; i < 25; i++) expect(s.trySend("k", `loc-${i}`)).toBe(0);
  expect(s.tryLowest()).toBeGreaterThan(0);
  // A phone: its health call waits while a send of it is paced, and takes nothing from it.
  expect(s.tryLowest("android:dev-1")).toBe(0);
  expect(s.trySend("android:dev-1", "loc-p")).toBe(0);
  expect(s.tryLowest("android:dev-1")).toBe(2000);
  clock.t += 2000;
  expect(s.tryLowest("android:dev-1")).toBe(0);
  expect(s.trySend("android:dev-1", "loc-p")).toBe(0);
});

function phones(perHour = 100) {
  const clock = { t: 1_000_000 };
  const ownBudget = (key: string) => (key.startsWith("android:") ? { perSecond: 20 / 60, burst: 1, perHour } : undefined);
  const s = createScheduler({ requestsPerSecond: 30, requestBurst: 5, messagesPerSecond: 10, ownBudget, now: () => clock.t });
  return { s, clock };
}

test("a phone's hourly budget (ANDROID_MESSAGES_PER_HOUR): at most so many sends in any hour, then it waits for the oldest to be an hour old", () => {
  const { s, clock } = phones(3);
  for (let i = 0; i < 3; i++) {
    expect(s.trySend("android:dev-1", "a")).toBe(0);
    clock.t += 3000;
  }
  // 9 s after the first send, the first leaves the hour at 3,600 s.
  expect(s.trySend("android:dev-1", "a")).toBe(3_600_000 - 9000);
  expect(s.trySend("android:dev-2", "b")).toBe(0); // another phone is its own
  clock.t += 3_600_000 - 9000;
  expect(s.trySend("android:dev-1", "a")).toBe(0);
  expect(s.trySend("android:dev-1", "a")).toBe(3000); // its per-minute pace still holds
});

test("a phone's hour seeded from the store's record counts those sends; a shorter record leaves this server's own count", () => {
  const { s, clock } = phones(3);
  const t0 = clock.t;
  s.seedHour("android:dev-1", [t0 - 3_000_000, t0 - 2_000_000]);
  expect(s.trySend("android:dev-1", "a")).toBe(0);
  clock.t += 3000;
  // Three in the hour: the oldest, 3,000 s ago, leaves it in 600 s.
  expect(s.trySend("android:dev-1", "a")).toBe(600_000 - 3000);
  s.seedHour("android:dev-1", [t0 - 2_000_000]);
  expect(s.trySend("android:dev-1", "a")).toBe(600_000 - 3000);
  s.seedHour("android:dev-2", [t0 - 1, t0 - 2, t0 - 3].reverse());
  expect(s.trySend("android:dev-2", "b")).toBe(3_600_000 - 3000 - 3);
  s.seedHour("cast-key", [t0, t0, t0, t0]); // a Cast key has no hour
  expect(s.trySend("cast-key", "c")).toBe(0);
});

test("a phone that hit its send limit waits, doubling while it keeps hitting it; a hit while it waits is the same hit", () => {
  const { s, clock } = phones();
  expect(s.limited("android:dev-1")).toBe(60_000);
  expect(s.trySend("android:dev-1", "a")).toBe(60_000);
  clock.t += 10_000;
  expect(s.limited("android:dev-1")).toBe(50_000); // the same hit, still waited out
  clock.t += 50_000;
  expect(s.trySend("android:dev-1", "a")).toBe(0);
  expect(s.limited("android:dev-1")).toBe(120_000);
  clock.t += 120_000;
  expect(s.limited("android:dev-1")).toBe(240_000);
  expect(s.trySend("android:dev-2", "b")).toBe(0); // another phone is not held up
  // A quiet spell twice its last wait: back to the first wait.
  clock.t += 240_000 + 480_001;
  expect(s.limited("android:dev-1")).toBe(60_000);
});

test("a phone's status read takes nothing of Cast's request budget", () => {
  const clock = { t: 1_000_000 };
  const ownBudget = (key: string) => (key.startsWith("android:") ? { perSecond: 20 / 60, burst: 1 } : undefined);
  const s = createScheduler({ requestsPerSecond: 30, requestBurst: 6, messagesPerSecond: 10, ownBudget, now: () => clock.t });
  // The phone is asked as often as its messages look: never told to wait for Cast's budget.
  for (let i = 0; i < 100; i++) expect(s.tryPoll("android:dev-1")).toBe(0);
  // Cast's burst of 6 is whole: its sends take all six.
  for (let i = 0; i < 6; i++) expect(s.trySend("cast-key", `loc-${i}`)).toBe(0);
  expect(s.trySend("cast-key", "loc-x")).toBeGreaterThan(0);
});
