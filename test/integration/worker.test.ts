import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { createLogger } from "../../src/core/log.ts";
import { createWorker } from "../../src/core/delivery/worker.ts";
import { useTempDb } from "../helpers/db.ts";
import { waitFor } from "../helpers/bridge.ts";
import { captureStream } from "../helpers/stream.ts";

const t = useTempDb("bridge-worker-");

test("jobs that throw pause instead of running again at once, and the queue is never read wholesale for them", async () => {
  const { jobs } = t;
  for (let i = 0; i < 200; i++) {
    jobs.enqueue({ messageId: `m-${i}`, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] }, 0);
  }
  const limits: number[] = [];
  const runs = new Map<string, number>();
  const logs: string[] = [];
  const worker = createWorker({
    // The real store, recording how many rows each look at the queue asks for.
    jobs: { ...t.store.jobs, due: (now, limit) => (limits.push(limit), t.store.jobs.due(now, limit)) },
    // Every run throws, as when the disk refuses every write.
    run: async (job) => {
      runs.set(job.message.messageId, (runs.get(job.message.messageId) ?? 0) + 1);
      throw new Error("attempt to write a readonly database");
    },
    now: Date.now,
    log: createLogger("error", captureStream(logs)),
    concurrency: 4,
    pollMs: 10,
    backoffMs: 60_000,
  });
  await worker.start();
  // A window of some 30 looks at the queue (pollMs 10) in which no job may run twice and
  // no look may read the whole queue.
  await sleep(300);
  await worker.stop(1000);

  expect(runs.size).toBeGreaterThan(0);
  expect(Math.max(...runs.values())).toBe(1); // none ran again within its pause
  expect(Math.max(...limits)).toBeLessThanOrEqual(4 + 2 * 4); // free slots + twice the concurrency
  expect(logs.join("")).toMatch(/job for message m-0 failed: attempt to write a readonly database; trying again in 60000 ms/);
});

test("finished jobs older than the retention are removed at start, a batch at a time; nothing unfinished, nothing recent", async () => {
  const { jobs, db } = t;
  const DAY = 86_400_000;
  const today = 100 * DAY;
  const add = (id: string, at: number) => (jobs.enqueue({ messageId: id, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] }, at), jobs.get(id)!.id);
  db.transaction(() => {
    for (let i = 0; i < 2500; i++) jobs.reported(add(`old-done-${i}`, 0), "delivered", today - 31 * DAY);
  })();
  jobs.giveUp(add("old-dead", 0), today - 31 * DAY, "HighLevel refused");
  jobs.reported(add("recent-done", 0), "delivered", today - 29 * DAY);
  jobs.retryLater(add("old-queued", 0), today + DAY, "paced", today - 60 * DAY); // still to send
  const reporting = add("old-reporting", 0);
  jobs.recordResult(reporting, { outcome: "delivered", gatewayMessageId: "g-1" }, today - 60 * DAY);
  jobs.retryLater(reporting, today + DAY, "403", today - 60 * DAY); // a report still to make
  const logs: string[] = [];
  const worker = createWorker({ jobs: t.store.jobs, run: async () => {}, now: () => today, log: createLogger("info", captureStream(logs)) });

  await worker.start();
  await waitFor(() => logs.some((line) => line.includes("removed")));
  await worker.stop(1000);

  expect(jobs.counts()).toEqual({ done: 1, queued: 1, reporting: 1 });
  expect(jobs.get("recent-done")?.state).toBe("done");
  expect(logs.join("")).toContain("queue: removed 2501 finished job(s) older than 30 days");
  expect(db.prepare("SELECT count(*) AS n FROM jobs").get()).toEqual({ n: 3 });
});

test("a server that does not lead the periodic work prunes nothing; the leader also removes expired settings-page sessions and unread unsubscribed lists", async () => {
  const { jobs } = t;
  const DAY = 86_400_000;
  const today = 100 * DAY;
  jobs.enqueue({ messageId: "old", locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] }, 0);
  jobs.reported(jobs.get("old")!.id, "delivered", today - 31 * DAY);
  await t.store.appSessions.open("hash-1", { locationId: "loc-1", userId: "u", role: "admin", expiresAt: today - 1 }, today - DAY, 10);
  // Cast's unsubscribed lists, on the store's own clock: one no send has read for a day and an hour, one just read.
  t.db.prepare("INSERT INTO unsubscribed_lists (tag, entries, read_at) VALUES ('unread', '[]', ?)").run(Date.now() - 25 * 3_600_000);
  await t.store.unsubscribed.put("in-use", []);
  const lists = () => (t.db.prepare("SELECT tag FROM unsubscribed_lists ORDER BY tag").all() as { tag: string }[]).map((row) => row.tag);
  const logs: string[] = [];
  const options = {
    jobs: t.store.jobs, appSessions: t.store.appSessions, unsubscribed: t.store.unsubscribed, run: async () => {}, now: () => today, log: createLogger("info", captureStream(logs)),
  };
  const follower = createWorker({ ...options, leads: () => false });
  await follower.start();
  await sleep(100);
  await follower.stop(1000);
  expect(jobs.get("old")?.state).toBe("done");
  expect(t.db.prepare("SELECT count(*) AS n FROM app_sessions").get()).toEqual({ n: 1 });
  expect(lists()).toEqual(["in-use", "unread"]);
  const leader = createWorker({ ...options, leads: () => true });
  await leader.start();
  await waitFor(() => logs.some((line) => line.includes("removed")));
  await waitFor(() => (t.db.prepare("SELECT count(*) AS n FROM app_sessions").get() as { n: number }).n === 0);
  await waitFor(() => lists().length === 1);
  await leader.stop(1000);
  expect(jobs.get("old")).toBeUndefined();
  expect(lists()).toEqual(["in-use"]);
  expect(logs.join("")).toContain("queue: removed 1 stored Cast unsubscribed list(s) no send has read for a day");
});

test("at start, a send a crash left 'sending' goes again only within the window it is given (its gateway's)", async () => {
  const { jobs } = t.store;
  const HOUR = 3_600_000;
  const now = 1000 * HOUR;
  const message = (id: string) => ({ messageId: id, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] });
  for (const [id, firstSentAt] of [["within", now - HOUR / 2], ["past", now - 2 * HOUR]] as const) {
    await jobs.enqueue(message(id), firstSentAt);
    expect(await jobs.claimForSending((await jobs.get(id))!.id, firstSentAt, { idempotencyKey: `key-${id}`, apiKeyTag: "tag" })).toBe(true);
  }
  const logs: string[] = [];
  const worker = createWorker({ jobs, run: async () => {}, now: () => now, resendWindows: { cast: HOUR }, pollMs: 60_000, log: createLogger("info", captureStream(logs)) });
  worker.start();
  await worker.stop(1000);
  expect(await jobs.get("within")).toMatchObject({ state: "queued", idempotencyKey: "key-within" });
  expect(await jobs.get("past")).toMatchObject({ state: "reporting", outcome: "failed", errorCode: "delivery_unknown" });
});

test("at start, each gateway's interrupted sends go again within its own window: a driver without idempotency fails none of Cast's", async () => {
  const { jobs } = t.store;
  const HOUR = 3_600_000;
  const now = 1000 * HOUR;
  const message = (id: string) => ({ messageId: id, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] });
  const sends = [
    ["cast-recent", "cast", now - HOUR / 2],
    ["cast-old", "cast", now - 3 * HOUR],
    ["phone-recent", "android:device-1", now - HOUR / 2],
  ] as const;
  for (const [id, gateway, firstSentAt] of sends) {
    await jobs.enqueue(message(id), firstSentAt);
    expect(await jobs.claimForSending((await jobs.get(id))!.id, firstSentAt, { idempotencyKey: `key-${id}`, apiKeyTag: "tag", gateway })).toBe(true);
  }
  const logs: string[] = [];
  const resendWindows = { cast: 2 * HOUR, android: 0 };
  const worker = createWorker({ jobs, run: async () => {}, now: () => now, resendWindows, pollMs: 60_000, log: createLogger("info", captureStream(logs)) });
  await worker.start();
  await worker.stop(1000);
  expect(await jobs.get("cast-recent")).toMatchObject({ state: "queued", idempotencyKey: "key-cast-recent" });
  expect(await jobs.get("cast-old")).toMatchObject({ state: "reporting", outcome: "failed", errorCode: "delivery_unknown" });
  expect(await jobs.get("phone-recent")).toMatchObject({ state: "reporting", outcome: "failed", errorCode: "delivery_unknown" });
});

test("servers sharing a queue (spread) start different jobs of it, still in turns between locations", async () => {
  const { jobs } = t;
  const locations = ["loc-1", "loc-2", "loc-3", "loc-4"];
  for (let i = 0; i < 80; i++) {
    jobs.enqueue({ messageId: `m-${i}`, locationId: locations[i % 4]!, contactId: "", phone: "+639171234567", message: "hi", attachments: [] }, 0);
  }
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const started = [new Map<string, string>(), new Map<string, string>()];
  // Two servers' workers on one queue; each job stays in flight, so each first look shows what it starts.
  const workers = started.map((mine) =>
    createWorker({
      jobs: t.store.jobs,
      run: async (job) => (mine.set(job.message.messageId, job.message.locationId), await gate),
      now: Date.now,
      log: createLogger("error", captureStream([])),
      concurrency: 8,
      spread: () => 3,
      recoverAtStart: false,
    }),
  );
  for (const worker of workers) await worker.start();
  await waitFor(() => started.every((mine) => mine.size === 8), 5000);
  const first = started.map((mine) => new Map(mine));
  release();
  for (const worker of workers) await worker.stop(1000);

  const both = [...first[0]!.keys()].filter((id) => first[1]!.has(id));
  expect(both.length).toBeLessThan(8); // without spreading, both start the same eight
  for (const mine of first) {
    const perLocation = locations.map((l) => [...mine.values()].filter((x) => x === l).length);
    expect(perLocation).toEqual([2, 2, 2, 2]);
  }
});

test("a server whose heartbeat is not stored starts no send; reports still run, and sends start once it is", async () => {
  const { jobs } = t;
  const message = (id: string) => ({ messageId: id, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] });
  jobs.enqueue(message("to-send"), 0);
  jobs.enqueue(message("to-report"), 0);
  const reporting = jobs.get("to-report")!.id;
  jobs.claimForSending(reporting, 0, { idempotencyKey: "k-1", apiKeyTag: "tag", gateway: "cast" });
  jobs.recordResult(reporting, { outcome: "delivered", gatewayMessageId: "g-1" }, 1);
  let beating = false;
  const ran: string[] = [];
  const worker = createWorker({
    jobs: t.store.jobs,
    // Each job then waits a minute (as for a budget): the look does not start it again meanwhile.
    run: async (job) => (ran.push(job.message.messageId), 60_000),
    now: Date.now,
    log: createLogger("error", captureStream([])),
    pollMs: 10,
    claims: () => beating,
    recoverAtStart: false,
  });
  await worker.start();
  try {
    await waitFor(() => ran.includes("to-report"), 2000);
    await sleep(100);
    expect(ran).not.toContain("to-send");
    beating = true;
    await waitFor(() => ran.includes("to-send"), 2000);
  } finally {
    await worker.stop(1000);
  }
});
