import { expect, test } from "vitest";
import { keyTag } from "../../src/core/key-tag.ts";
import { createLogger } from "../../src/core/log.ts";
import { createScheduler, HOUR_MS } from "../../src/core/delivery/scheduler.ts";
import { castKeyRate, createSendBudget, OTHER_SENDER_MS, type SendBudgetOptions } from "../../src/core/delivery/send-budget.ts";
import { useTempDb } from "../helpers/db.ts";
import { captureStream } from "../helpers/stream.ts";

// A phone's hourly budget counts the phone's sends of the last hour the store holds (real
// claims in a real SQLite store), each time a server starts sending through the phone.

const ctx = useTempDb("bridge-phone-hour-");
const PHONE = "android:dev-1";
const PER_HOUR = 3;
let n = 0;

/** A send through the phone claimed in the store at `at`, by whichever server. */
async function sentThroughPhone(at: number): Promise<void> {
  n += 1;
  const message = { messageId: `m-${n}`, locationId: "loc-1", contactId: "c", phone: "+639171234567", message: "hi", attachments: [] };
  await ctx.store.jobs.enqueue(message, at);
  const { id } = (await ctx.store.jobs.get(`m-${n}`))!;
  await ctx.store.jobs.claimForSending(id, at, { idempotencyKey: `idem-${n}`, apiKeyTag: keyTag(PHONE), gateway: PHONE });
}

/** A server's send budget over the store: a phone of PER_HOUR an hour whose pace never holds it up. */
function server(clock: { t: number }, more: Partial<SendBudgetOptions> = {}) {
  const ownBudget = (key: string) => (key.startsWith("android:") ? { perSecond: 100, burst: 10, perHour: PER_HOUR } : undefined);
  const scheduler = createScheduler({ requestsPerSecond: 30, requestBurst: 50, messagesPerSecond: 10, ownBudget, now: () => clock.t });
  const lines: string[] = [];
  const budget = createSendBudget({
    scheduler,
    keyBudgets: ctx.store.keyBudgets,
    rate: castKeyRate(10),
    ownBudget: (key) => ownBudget(key) !== undefined,
    log: createLogger("warn", captureStream(lines)),
    now: () => clock.t,
    sentSince: (apiKey, since) => ctx.store.phoneJobs.sentSince(keyTag(apiKey), since),
    ...more,
  });
  return { budget, lines };
}

test("a server started after the phone's sends of the last hour counts them: a restart does not start its hour afresh", async () => {
  const clock = { t: 10 * HOUR_MS };
  await sentThroughPhone(clock.t - HOUR_MS - 1); // over an hour ago: not counted
  await sentThroughPhone(clock.t - 600_000);
  await sentThroughPhone(clock.t - 300_000);
  const { budget } = server(clock);
  expect(await budget.take(PHONE, "loc-1")).toBe(0);
  // The third of the hour went: the next waits until the send of 600 s ago is an hour old.
  expect(await budget.take(PHONE, "loc-1")).toBe(HOUR_MS - 600_000);
  expect(budget.take("cast-key", "loc-2")).toBe(0); // a Cast key reads nothing and waits for no promise
});

test("sends that come at once read the phone's hour once, and all count it", async () => {
  const clock = { t: 10 * HOUR_MS };
  await sentThroughPhone(clock.t - 1000);
  let reads = 0;
  const { budget } = server(clock, {
    sentSince: (apiKey, since) => {
      reads += 1;
      return ctx.store.phoneJobs.sentSince(keyTag(apiKey), since);
    },
  });
  const waits = await Promise.all([1, 2, 3, 4].map(() => budget.take(PHONE, "loc-1")));
  expect(waits.filter((w) => w === 0)).toHaveLength(PER_HOUR - 1);
  expect(reads).toBe(1);
});

test("servers sharing the store: a server that takes the phone's turn again counts what another sent meanwhile", async () => {
  const clock = { t: 10 * HOUR_MS };
  const lease = { owner: true, held: false };
  const { budget } = server(clock, {
    keyBudgets: { ...ctx.store.keyBudgets, shared: true },
    owns: async () => {
      if (lease.owner) lease.held = true;
      return lease.owner;
    },
    ownsNow: () => lease.held,
  });
  expect(await budget.take(PHONE, "loc-1")).toBe(0);
  await sentThroughPhone(clock.t);
  // Another server's turn: this one waits for it, and two sends go through the phone there.
  lease.owner = false;
  lease.held = false;
  expect(await budget.take(PHONE, "loc-1")).toBe(OTHER_SENDER_MS);
  await sentThroughPhone(clock.t + 1000);
  await sentThroughPhone(clock.t + 2000);
  clock.t += 3000;
  lease.owner = true;
  expect(await budget.take(PHONE, "loc-1")).toBe(HOUR_MS - 3000);
});

test("a read of the phone's hour that fails is logged; the send goes on this server's count, and the next send reads again", async () => {
  const clock = { t: 10 * HOUR_MS };
  let fail = true;
  const { budget, lines } = server(clock, {
    sentSince: async (apiKey, since) => {
      if (fail) throw new Error("connection refused");
      return ctx.store.phoneJobs.sentSince(keyTag(apiKey), since);
    },
  });
  expect(await budget.take(PHONE, "loc-1")).toBe(0);
  expect(lines.join("")).toContain("a phone's sends of the last hour could not be read (its hourly budget counts this server's only): Error: connection refused");
  fail = false;
  for (let i = 0; i < 3; i++) await sentThroughPhone(clock.t - 1000);
  expect(await budget.take(PHONE, "loc-1")).toBe(HOUR_MS - 1000);
});
