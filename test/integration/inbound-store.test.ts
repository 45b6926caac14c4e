import { expect, test } from "vitest";
import { createWorker } from "../../src/core/delivery/worker.ts";
import { createLogger } from "../../src/core/log.ts";
import { createInboundStore, type NewInbound } from "../../src/db/inbound.ts";
import { waitFor } from "../helpers/bridge.ts";
import { useTempDb } from "../helpers/db.ts";
import { captureStream } from "../helpers/stream.ts";

// The replies' store on a real SQLite file: dedupe keys, and pruning after retention.

const ctx = useTempDb("bridge-inbound-");

function row(n: number, locationId = "loc-1"): NewInbound & { state: "queued" | "unrouted" } {
  return {
    inboundId: `in-${n}`,
    source: "api",
    dedupeKey: `key-${n}`,
    phone: "+639171234567",
    text: `reply ${n}`,
    to: "",
    deviceId: "",
    receivedAt: "",
    receivedMs: 1000,
    sourceId: "",
    locationId,
    routedBy: locationId ? "given" : "",
    optOut: "",
    state: locationId ? "queued" : "unrouted",
  };
}

test("a dedupe key is stored once", () => {
  const store = createInboundStore(ctx.db);
  expect(store.insert(row(1), 1000)).toBe(true);
  expect(store.insert({ ...row(2), dedupeKey: "key-1" }, 1000)).toBe(false);
  expect(store.idOfKey("key-1")).toBe("in-1");
});

test("prune: only finished replies last changed before the cut, in batches; unrouted and waiting ones stay", () => {
  const store = createInboundStore(ctx.db);
  for (let n = 1; n <= 5; n++) store.insert(row(n, n === 5 ? "" : "loc-1"), 1000);
  const id = (n: number) => store.get(`in-${n}`)?.id ?? 0;
  for (const n of [1, 2]) {
    store.markPosting(id(n), 2000);
    store.posted(id(n), `msg-${n}`, 2000);
  }
  store.giveUp(id(3), "not posted", 2000);
  store.markPosting(id(4), 9000);
  store.posted(id(4), "msg-4", 9000);
  expect(store.prune(5000, 2)).toBe(2);
  expect(store.prune(5000, 2)).toBe(1);
  expect(store.prune(5000, 2)).toBe(0);
  expect(["in-1", "in-2", "in-3", "in-4", "in-5"].filter((i) => store.get(i))).toEqual(["in-4", "in-5"]);
});

test("the queue worker's clean-up removes finished replies past the retention too", async () => {
  const store = createInboundStore(ctx.db);
  store.insert(row(1), 1000);
  const { id } = store.get("in-1") ?? { id: 0 };
  store.giveUp(id, "not posted", 2000);
  const logs: string[] = [];
  const worker = createWorker({ jobs: ctx.store.jobs, replies: ctx.store.replies, run: async () => {}, now: () => 10_000, retentionMs: 5000, log: createLogger("info", captureStream(logs)) });
  await worker.start();
  await waitFor(() => logs.some((line) => line.includes("removed")));
  await worker.stop(1000);
  expect(logs.join("")).toContain("queue: removed 1 finished reply(ies) older than");
  expect(store.get("in-1")).toBeUndefined();
});
