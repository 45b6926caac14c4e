import { expect } from "vitest";
import type { Store } from "../../src/store/contract.ts";
import type { Case } from "./store-cases-registry.ts";

const T0 = 1_700_000_000_000;

function message(id: string, locationId = "loc-1") {
  return { messageId: id, locationId, contactId: `c-${id}`, phone: "+639171234567", message: `hello ${id}`, attachments: [] };
}

/** Enqueues `id` at `at` and claims it (through `gateway`): its job's id. */
async function claimed(store: Store, id: string, at: number, gateway = "cast"): Promise<number> {
  await store.jobs.enqueue(message(id), at);
  const job = (await store.jobs.get(id))!;
  expect(await store.jobs.claimForSending(job.id, at, { idempotencyKey: `idem-${id}`, apiKeyTag: "tag-1", gateway })).toBe(true);
  return job.id;
}

/** One message of each status the log shows, msg-1 to msg-7 in MESSAGE_STATUSES's order but on_phone, which is msg-4. */
async function everyStatus(store: Store): Promise<void> {
  await store.jobs.enqueue(message("msg-1"), T0 + 1);
  await store.jobs.enqueue(message("msg-2"), T0 + 2);
  await store.jobs.markHeld((await store.jobs.get("msg-2"))!.id, "key refused", T0 + 60_000, T0 + 2);
  await claimed(store, "msg-3", T0 + 3);
  const receipt = { at: T0 + 10, deadline: T0 + 100 };
  await store.jobs.recordResult(await claimed(store, "msg-4", T0 + 4, "android:dev-1"), { outcome: "delivered", parts: 1 }, T0 + 4, receipt);
  await store.jobs.recordResult(await claimed(store, "msg-5", T0 + 5), { outcome: "delivered", parts: 2 }, T0 + 5, receipt);
  await store.jobs.recordResult(await claimed(store, "msg-6", T0 + 6), { outcome: "delivered", parts: 3 }, T0 + 6);
  await store.jobs.recordResult(await claimed(store, "msg-7", T0 + 7), { outcome: "failed", errorCode: "invalid_phone" }, T0 + 7);
}

/** The contract's cases of the message log (store-cases.ts runs them). */
export function logCases(it: Case): void {
  it("the message log shows each status, counted alike; a phone's sent message leaves on_phone", ["jobs", "messages"], async (store) => {
    await everyStatus(store);
    const statuses = ["queued", "held", "sending", "on_phone", "sent", "delivered", "failed"];
    const shown = await Promise.all(statuses.map((_, n) => store.messages.get(`msg-${n + 1}`)));
    expect(shown.map((m) => m?.status)).toEqual(statuses);
    expect(shown[3]).toMatchObject({ gateway: "android", deviceId: "dev-1", parts: 1, receiptDeadline: T0 + 100 });
    expect(await store.messages.counts()).toEqual(Object.fromEntries(statuses.map((s) => [s, 1])));
    for (const status of statuses) {
      expect((await store.messages.list({ status: status as "queued", limit: 10 })).map((m) => m.status)).toEqual([status]);
    }
    const phone = shown[3]!.id;
    await store.jobs.sentByPhone(phone, T0 + 8, "an event");
    expect((await store.messages.get("msg-4"))?.status).toBe("sent");
    expect(await store.messages.counts()).toMatchObject({ on_phone: 0, sent: 2 });
    expect((await store.messages.events(phone)).map((e) => [e.at, e.kind])).toEqual([[T0 + 8, "sent"]]);
    expect(await store.messages.get("msg-9")).toBeUndefined();
  });

  it("the message log lists newest first, by location, status and time, a page at a time", ["jobs", "messages"], async (store) => {
    for (const [id, at, location] of [["m-a", 1, "loc-1"], ["m-b", 2, "loc-2"], ["m-c", 3, "loc-1"], ["m-d", 3, "loc-2"], ["m-e", 4, "loc-1"]] as const) {
      await store.jobs.enqueue(message(id, location), T0 + at);
    }
    const ids = async (filter: Parameters<Store["messages"]["list"]>[0]) => (await store.messages.list(filter)).map((m) => m.message.messageId);
    expect(await ids({ limit: 10 })).toEqual(["m-e", "m-d", "m-c", "m-b", "m-a"]);
    expect(await ids({ locationId: "loc-2", limit: 10 })).toEqual(["m-d", "m-b"]);
    expect(await ids({ since: T0 + 3, limit: 10 })).toEqual(["m-e", "m-d", "m-c"]);
    expect(await ids({ status: "queued", locationId: "loc-1", since: T0 + 2, limit: 1 })).toEqual(["m-e"]);
    const page = await store.messages.list({ limit: 2 });
    const last = page[page.length - 1]!;
    expect(await ids({ before: { createdAt: last.createdAt, id: last.id }, limit: 2 })).toEqual(["m-c", "m-b"]);
    expect(await ids({ status: "failed", limit: 10 })).toEqual([]);
  });

  it("a settled message is requeued once, as new, what it counted in usage taken back", ["jobs", "messages", "usage"], async (store) => {
    const id = await claimed(store, "msg-1", T0);
    await store.jobs.recordResult(id, { outcome: "failed", errorCode: "invalid_phone" }, T0 + 1);
    await store.jobs.reported(id, "failed", T0 + 2);
    const counted = async () => (await store.usage.list({ locationId: "loc-1" })).map((r) => [r.messages, r.failed_invalid]);
    expect(await counted()).toEqual([[1, 1]]);
    const seen = (await store.messages.get("msg-1"))!;
    expect(seen).toMatchObject({ status: "failed", state: "done", reportedStatus: "failed", updatedAt: T0 + 2 });
    expect(await store.messages.requeue(seen, T0 + 10, "by the operator")).toBe(true);
    expect(await store.messages.get("msg-1")).toMatchObject({
      status: "queued", state: "queued", idempotencyKey: null, errorCode: null, reportedStatus: null, requeuedAt: T0 + 10, updatedAt: T0 + 10,
    });
    expect(await counted()).toEqual([[0, 0]]);
    expect((await store.messages.events(id)).at(-1)).toEqual({ at: T0 + 10, kind: "requeued", detail: "by the operator" });
    expect(await store.messages.requeue(seen, T0 + 11, "again")).toBe(false);
    expect(await store.messages.requeue((await store.messages.get("msg-1"))!, T0 + 12, "queued")).toBe(false);
    expect((await store.messages.events(id)).filter((e) => e.kind === "requeued")).toHaveLength(1);
  });

  it("a sent message the gateway gave no part count for, requeued: the parts it billed from its reservation are taken back", ["jobs", "messages", "usage"], async (store) => {
    await store.jobs.enqueue(message("msg-1"), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    expect(await store.jobs.claimForSending(id, T0, { idempotencyKey: "idem-1", apiKeyTag: "tag-1", gateway: "cast", parts: 2 })).toBe(true);
    await store.jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: "g-1" }, T0 + 1);
    await store.jobs.reported(id, "delivered", T0 + 2);
    const counted = async () => (await store.usage.list({ locationId: "loc-1" })).map((r) => [r.messages, r.parts, r.delivered]);
    expect(await counted()).toEqual([[1, 2, 1]]);
    expect(await store.messages.requeue((await store.messages.get("msg-1"))!, T0 + 10, "by the operator")).toBe(true);
    expect(await counted()).toEqual([[0, 0, 0]]);
  });

  it("the backlog, a location's usage and its messages received since", ["jobs", "messages"], async (store) => {
    await everyStatus(store);
    await store.jobs.enqueue(message("test-1", "loc-2"), T0);
    await store.jobs.enqueue(message("test-2", "loc-2"), T0 + 20);
    await store.jobs.enqueue(message("test-3"), T0 + 30);
    expect(await store.messages.backlog()).toEqual([
      { locationId: "loc-2", waiting: 2, oldest: T0 },
      { locationId: "loc-1", waiting: 4, oldest: T0 + 1 },
    ]);
    expect(await store.messages.usage("loc-1", T0 + 3)).toEqual({ messages: 6, parts: 6, delivered: 1, failed: 1 });
    expect(await store.messages.usage("loc-9", T0)).toEqual({ messages: 0, parts: 0, delivered: 0, failed: 0 });
    expect(await store.messages.receivedSince("loc-2", T0, "test-")).toEqual([T0, T0 + 20]);
    expect(await store.messages.receivedSince("loc-2", T0 + 1, "test-")).toEqual([T0 + 20]);
    expect(await store.messages.receivedSince("loc-1", T0, "test-")).toEqual([T0 + 30]);
    expect(await store.messages.receivedSince("loc-1", T0, "msg-")).toHaveLength(7);
  });
}
