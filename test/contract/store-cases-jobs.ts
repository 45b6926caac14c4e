import { expect } from "vitest";
import type { Store } from "../../src/store/contract.ts";
import type { Claim } from "../../src/store/types.ts";
import type { Case } from "./store-cases-registry.ts";

const T0 = 1_700_000_000_000;
const MONTH = "2023-11"; // T0's month in Asia/Manila, where usage counts by default

function message(n: number, locationId = "loc-1") {
  return { messageId: `msg-${n}`, locationId, contactId: `c-${n}`, phone: "+639171234567", message: `hello ${n}`, attachments: [] };
}

/** Message `n` enqueued at `at` and claimed under `idem-n`; its job's id. */
async function claimed(store: Store, n: number, claim: Partial<Claim> = {}, at = T0, locationId = "loc-1"): Promise<number> {
  await store.jobs.enqueue(message(n, locationId), at);
  const { id } = (await store.jobs.get(`msg-${n}`))!;
  expect(await store.jobs.claimForSending(id, at, { idempotencyKey: `idem-${n}`, apiKeyTag: "tag-1", ...claim })).toBe(true);
  return id;
}

/** Message `n` sent and waiting for its receipt until T0 + 100, first looked at T0 + 50. */
async function awaiting(store: Store, n: number, claim: Partial<Claim> = {}): Promise<number> {
  const id = await claimed(store, n, claim);
  await store.jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: `gw-${n}`, parts: 1 }, T0 + 1, { at: T0 + 50, deadline: T0 + 100 });
  return id;
}

/** The contract's cases of the job store's single steps (store-cases.ts runs them). */
export function jobCases(it: Case): void {
  it("due jobs come in turns between locations; a waiting location's sends are left, its reports read", ["jobs"], async (store) => {
    for (const n of [1, 2, 3]) await store.jobs.enqueue(message(n, "loc-a"), T0 + n);
    await store.jobs.enqueue(message(4, "loc-b"), T0 + 9);
    const report = await awaiting(store, 5, {});
    const turns = await store.jobs.due(T0 + 60, 10);
    expect(turns.map((j) => [j.locationId, j.turn, j.state])).toEqual([
      ["loc-a", 1, "queued"], ["loc-b", 1, "queued"], ["loc-1", 1, "reporting"], ["loc-a", 2, "queued"], ["loc-a", 3, "queued"],
    ]);
    expect((await store.jobs.due(T0 + 60, 2)).map((j) => j.locationId)).toEqual(["loc-a", "loc-b"]);
    const waiting = await store.jobs.due(T0 + 60, 10, (location) => location !== "loc-b");
    expect(waiting.map((j) => j.locationId)).toEqual(["loc-b", "loc-1"]);
    expect(waiting[1]).toEqual({ id: report, state: "reporting", locationId: "loc-1", turn: 1 });
    expect(await store.jobs.due(T0 + 1.5, 10)).toEqual([{ id: (await store.jobs.get("msg-1"))!.id, state: "queued", locationId: "loc-a", turn: 1 }]);
  });

  it("counts by state, and the oldest job waiting to be sent", ["jobs"], async (store) => {
    expect(await store.jobs.counts()).toEqual({});
    expect(await store.jobs.oldestQueuedAt()).toBeUndefined();
    await store.jobs.enqueue(message(1), T0 + 5);
    await store.jobs.enqueue(message(2), T0 + 7);
    await claimed(store, 3, {}, T0 + 1);
    expect(await store.jobs.counts()).toEqual({ queued: 2, sending: 1 });
    expect(await store.jobs.oldestQueuedAt()).toBe(T0 + 5);
  });

  it("finished jobs are pruned, at most the limit, their ids still remembered", ["jobs"], async (store) => {
    for (const n of [1, 2, 3]) {
      const id = await awaiting(store, n);
      await store.jobs.reported(id, "delivered", T0 + n);
    }
    await store.jobs.giveUp(await awaiting(store, 4), T0 + 4, "refused");
    await store.jobs.enqueue(message(5), T0);
    expect(await store.jobs.prune(T0 + 4, 2)).toBe(2);
    expect(await store.jobs.prune(T0 + 4, 10)).toBe(1);
    expect(await store.jobs.counts()).toEqual({ dead: 1, queued: 1 });
    expect(await store.jobs.prune(T0 + 5, 10)).toBe(1);
    expect(await store.jobs.enqueue(message(1), T0 + 6)).toBe(false);
  });

  it("a send later keeps its key; with a fresh key the next claim takes the new one", ["jobs", "phoneJobs"], async (store) => {
    const id = await claimed(store, 1);
    await store.jobs.sendLater(id, T0 + 10, "unreachable", T0 + 1, { unclear: true });
    expect(await store.jobs.byId(id)).toMatchObject({ state: "queued", idempotencyKey: "idem-1", errorMessage: "unreachable", unclear: true });
    expect(await store.jobs.claimForSending(id, T0 + 10, { idempotencyKey: "idem-x", apiKeyTag: "tag-2" })).toBe(true);
    expect(await store.jobs.byId(id)).toMatchObject({ idempotencyKey: "idem-1", apiKeyTag: "tag-1", attempts: 2, firstSentAt: T0 });
    await store.jobs.sendLater(id, T0 + 20, "refused", T0 + 11, { freshKey: true });
    expect(await store.jobs.byId(id)).toMatchObject({ idempotencyKey: null, apiKeyTag: null, firstSentAt: null, unclear: true });
    expect(await store.jobs.claimForSending(id, T0 + 20, { idempotencyKey: "idem-2", apiKeyTag: "tag-2" })).toBe(true);
    expect(await store.jobs.byId(id)).toMatchObject({ idempotencyKey: "idem-2", apiKeyTag: "tag-2", firstSentAt: T0 + 20 });
    await store.jobs.sendLater(id, T0 + 30, "refused", T0 + 21);
    expect(await store.jobs.claimForSending(id, T0 + 30, { idempotencyKey: "idem-3", apiKeyTag: "tag-3", fresh: true, gateway: "android:dev-1" })).toBe(true);
    expect(await store.jobs.byId(id)).toMatchObject({ idempotencyKey: "idem-3", apiKeyTag: "tag-3", firstSentAt: T0 + 30 });
    expect(await store.phoneJobs.sentAs("idem-3")).toMatchObject({ id, waiting: false });
  });

  it("a job claimed without a claim is failed without a send", ["jobs"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    expect(await store.jobs.claimForSending(id, T0)).toBe(true);
    await store.jobs.recordResult(id, { outcome: "failed", errorCode: "gateway_unknown", errorMessage: "no answer" }, T0 + 1);
    expect(await store.jobs.byId(id)).toMatchObject({ state: "reporting", idempotencyKey: null, outcome: "failed", unclear: true, receiptDeadline: null });
    await store.jobs.recordResult(id, { outcome: "delivered" }, T0 + 2);
    expect(await store.jobs.byId(id)).toMatchObject({ outcome: "failed", errorCode: "gateway_unknown" });
  });

  it("a sent message proven never to have gone is queued again as new", ["jobs"], async (store) => {
    const id = await awaiting(store, 1);
    await store.jobs.sendAgain(id, T0 + 5, "the phone's limit", T0 + 2);
    expect(await store.jobs.byId(id)).toMatchObject({
      state: "queued", attempts: 0, outcome: null, gatewayMessageId: null, idempotencyKey: null, apiKeyTag: null, sentAt: null, errorMessage: "the phone's limit",
    });
    await store.jobs.sendAgain(id, T0 + 6, "again", T0 + 3);
    expect(await store.jobs.byId(id)).toMatchObject({ errorMessage: "the phone's limit" });
  });

  it("a held job waits until its key is woken, then is due", ["jobs"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    await store.jobs.enqueue(message(2), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    await store.jobs.markHeld(id, "key refused", T0 + 60_000, T0);
    expect(await store.jobs.byId(id)).toMatchObject({ held: true, errorMessage: "key refused" });
    expect((await store.jobs.due(T0 + 1, 10)).map((j) => j.id)).not.toContain(id);
    expect(await store.jobs.wakeHeld(T0 + 2)).toBe(1);
    expect(await store.jobs.wakeHeld(T0 + 2)).toBe(0);
    expect((await store.jobs.due(T0 + 2, 10)).map((j) => j.id)).toContain(id);
    expect(await store.jobs.claimForSending(id, T0 + 3, { idempotencyKey: "idem-1", apiKeyTag: "tag-1" })).toBe(true);
    expect(await store.jobs.byId(id)).toMatchObject({ held: false });
  });

  it("a receipt is looked for later, or now when a read found it; a settled one keeps its schedule", ["jobs"], async (store) => {
    const id = await awaiting(store, 1);
    expect(await store.jobs.due(T0 + 49, 10)).toEqual([]);
    await store.jobs.receiptLater(id, T0 + 80, T0 + 50);
    expect(await store.jobs.due(T0 + 79, 10)).toEqual([]);
    await store.jobs.receiptsDue([id, id + 100], T0 + 60);
    expect((await store.jobs.due(T0 + 60, 10)).map((j) => j.id)).toEqual([id]);
    await store.jobs.recordReceipt(id, { outcome: "failed", receipt: "UNDELIV", errorCode: "send_failed", errorMessage: "undelivered" }, T0 + 61);
    expect(await store.jobs.byId(id)).toMatchObject({ outcome: "failed", receipt: "UNDELIV", receiptDeadline: null, errorCode: "send_failed" });
    await store.jobs.receiptLater(id, T0 + 500, T0 + 62);
    await store.jobs.receiptsDue([id], T0 + 30);
    expect((await store.jobs.due(T0 + 61, 10)).map((j) => j.id)).toEqual([id]);
  });

  it("a key's messages waiting for their receipt are listed, the oldest first, whoever looked; a settled one no longer", ["jobs"], async (store) => {
    const first = await awaiting(store, 1);
    const second = await awaiting(store, 2);
    await awaiting(store, 3, { apiKeyTag: "tag-2" });
    const sentAt = (await store.jobs.byId(first))!.sentAt ?? (await store.jobs.byId(first))!.firstSentAt;
    expect(await store.jobs.awaitingReceipts("tag-1", 10)).toEqual([
      { jobId: first, messageId: "gw-1", sentAt, crmMessageId: "msg-1", locationId: "loc-1" },
      { jobId: second, messageId: "gw-2", sentAt, crmMessageId: "msg-2", locationId: "loc-1" },
    ]);
    expect((await store.jobs.awaitingReceipts("tag-1", 1)).map((w) => w.jobId)).toEqual([first]);
    await store.jobs.recordReceipt(first, { outcome: "delivered", receipt: "DELIVRD" }, T0 + 60);
    expect((await store.jobs.awaitingReceipts("tag-1", 10)).map((w) => w.jobId)).toEqual([second]);
    expect(await store.jobs.awaitingReceipts("tag-9", 10)).toEqual([]);
  });

  it("a due report is taken once: put off until the take ends, not taken while a receipt is awaited", ["jobs"], async (store) => {
    const id = await awaiting(store, 1);
    expect(await store.jobs.takeReport(id, T0 + 60, T0 + 1000)).toBe(false); // its receipt is awaited
    await store.jobs.recordReceipt(id, { outcome: "delivered", receipt: "DELIVRD" }, T0 + 61);
    expect(await store.jobs.takeReport(id, T0 + 62, T0 + 1000)).toBe(true);
    expect(await store.jobs.takeReport(id, T0 + 63, T0 + 1000)).toBe(false);
    expect(await store.jobs.due(T0 + 999, 10)).toEqual([]);
    expect((await store.jobs.due(T0 + 1000, 10)).map((j) => j.id)).toEqual([id]);
    expect(await store.jobs.takeReport(id, T0 + 1000, T0 + 2000)).toBe(true);
  });

  it("a phone's send is marked sent by the phone once; a Cast send never", ["jobs", "phoneJobs"], async (store) => {
    const phone = await awaiting(store, 1, { gateway: "android:dev-1" });
    const cast = await awaiting(store, 2);
    await store.jobs.sentByPhone(cast, T0 + 2, "an event");
    expect(await store.jobs.wasSentByPhone(cast)).toBe(false);
    expect(await store.jobs.wasSentByPhone(phone)).toBe(false);
    await store.jobs.sentByPhone(phone, T0 + 2, "an event");
    await store.jobs.sentByPhone(phone, T0 + 3, "a read of its state");
    expect(await store.jobs.wasSentByPhone(phone)).toBe(true);
    expect(await store.phoneJobs.sentAs("idem-1")).toEqual({
      id: phone, messageId: "msg-1", locationId: "loc-1", firstSentAt: T0, waiting: true, apiKeyTag: "tag-1", parts: 1,
    });
    expect(await store.phoneJobs.sentAs("idem-9")).toBeUndefined();
  });

  it("a phone's sends since a time: its key's, through a phone, the oldest first", ["jobs", "phoneJobs"], async (store) => {
    await claimed(store, 1, { gateway: "android:dev-1", apiKeyTag: "phone" }, T0 + 30);
    await claimed(store, 2, { gateway: "android:dev-1", apiKeyTag: "phone" }, T0 + 10);
    await claimed(store, 3, { gateway: "android:dev-1", apiKeyTag: "phone" }, T0 - 1);
    await claimed(store, 4, { gateway: "android:dev-2", apiKeyTag: "other" }, T0 + 20);
    await claimed(store, 5, { gateway: "cast", apiKeyTag: "phone" }, T0 + 20);
    await store.jobs.enqueue(message(6), T0);
    expect(await store.phoneJobs.sentSince("phone", T0)).toEqual([T0 + 10, T0 + 30]);
    expect(await store.phoneJobs.sentSince("phone", T0 + 31)).toEqual([]);
  });

  it("a report retried keeps the first error; given up, the job is dead", ["jobs"], async (store) => {
    const id = await awaiting(store, 1);
    await store.jobs.recordReceipt(id, { outcome: "delivered", receipt: "DELIVERED" }, T0 + 2);
    await store.jobs.retryLater(id, T0 + 10, "HighLevel unreachable", T0 + 3);
    await store.jobs.retryLater(id, T0 + 20, "HighLevel refused", T0 + 11);
    expect(await store.jobs.byId(id)).toMatchObject({ state: "reporting", attempts: 2, errorMessage: "HighLevel unreachable" });
    expect(await store.jobs.due(T0 + 19, 10)).toEqual([]);
    await store.jobs.giveUp(id, T0 + 21, "too many tries");
    expect(await store.jobs.byId(id)).toMatchObject({ state: "dead" });
  });

  it("a run's error is on the timeline once until its reason changes", ["jobs", "messages"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    for (const [reason, at] of [["sealed", 1], ["sealed", 2], ["other", 3], ["sealed", 4]] as const) await store.jobs.noteError(id, reason, T0 + at);
    expect((await store.messages.events(id)).map((e) => [e.at - T0, e.kind, e.detail])).toEqual([
      [1, "error", "sealed"], [3, "error", "other"], [4, "error", "sealed"],
    ]);
  });

  it("a settled job is counted in usage once, as it settles", ["jobs", "usage"], async (store) => {
    const delivered = await awaiting(store, 1);
    await store.jobs.recordReceipt(delivered, { outcome: "delivered", receipt: "DELIVERED" }, T0 + 2);
    expect(await store.usage.list({})).toEqual([]);
    await store.jobs.reported(delivered, "delivered", T0 + 3);
    await store.jobs.reported(delivered, "delivered", T0 + 4);
    await store.jobs.giveUp(await awaiting(store, 2, { gateway: "android:dev-1" }), T0 + 5, "refused");
    const rows = await store.usage.list({});
    expect(rows.map((r) => [r.gateway, r.month, r.messages, r.parts, r.delivered])).toEqual([["android", MONTH, 1, 1, 1], ["cast", MONTH, 1, 1, 1]]);
  });

  it("a claim past the location's monthly cap is refused and failed; a retry reserves nothing more", ["jobs", "usage", "tokens"], async (store) => {
    await store.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    await store.usage.setCap("loc-1", 3, T0);
    const first = await claimed(store, 1, { parts: 2 });
    expect(await store.usage.used("loc-1", MONTH)).toBe(2);
    await store.jobs.sendLater(first, T0 + 1, "unreachable", T0 + 1);
    expect(await store.jobs.claimForSending(first, T0 + 2, { idempotencyKey: "idem-1", apiKeyTag: "tag-1", parts: 2 })).toBe(true);
    expect(await store.usage.used("loc-1", MONTH)).toBe(2);
    await store.jobs.enqueue(message(2), T0);
    const second = (await store.jobs.get("msg-2"))!.id;
    expect(await store.jobs.claimForSending(second, T0 + 3, { idempotencyKey: "idem-2", apiKeyTag: "tag-1", parts: 2 })).toBe(false);
    expect(await store.jobs.byId(second)).toMatchObject({ state: "reporting", outcome: "failed", errorCode: "monthly_cap", idempotencyKey: null });
    expect((await store.jobs.byId(second))?.errorMessage).toMatch(/monthly SMS limit of 3 reached/);
    await store.jobs.recordResult(first, { outcome: "delivered", gatewayMessageId: "gw-1" }, T0 + 4);
    await store.jobs.reported(first, "delivered", T0 + 5);
    await store.jobs.reported(second, "failed", T0 + 5);
    expect(await store.usage.used("loc-1", MONTH)).toBe(2);
    expect((await store.usage.list({}))[0]).toMatchObject({ messages: 2, parts: 2, delivered: 1, refused_cap: 1 });
  });
}
