import { expect, test } from "vitest";
import type { Store } from "../../src/store/contract.ts";
import type { NewInbound, OutboundMessage } from "../../src/store/types.ts";
import { inboundCases } from "./store-cases-inbound.ts";
import { logCases } from "./store-cases-log.ts";
import { jobCases } from "./store-cases-jobs.ts";
import { budgetCases } from "./store-cases-budgets.ts";
import { registryCases } from "./store-cases-registry.ts";
import { serverCases } from "./store-cases-servers.ts";
import { usageCases } from "./store-cases-usage.ts";

/** How a store under test is made: a fresh, empty one each time, closed after. */
export interface StoreFactory {
  name: string;
  open(): Promise<{ store: Store; close(): Promise<void> }>;
}

const T0 = 1_700_000_000_000;

export function message(n: number, locationId = "loc-1"): OutboundMessage {
  return { messageId: `msg-${n}`, locationId, contactId: `c-${n}`, phone: "+639171234567", message: `hello ${n}`, attachments: [] };
}

export function reply(n: number, change: Partial<NewInbound> = {}): NewInbound {
  return {
    inboundId: `in-${n}`, source: "api", dedupeKey: `key-${n}`, phone: "+639171234567", text: `reply ${n}`, to: "", deviceId: "",
    receivedAt: "", receivedMs: T0, sourceId: "", locationId: "loc-1", routedBy: "given", optOut: "", ...change,
  };
}

/** Runs `fn` on a fresh store of `factory`, closing it after. */
async function using(factory: StoreFactory, fn: (store: Store) => Promise<void>): Promise<void> {
  const { store, close } = await factory.open();
  try {
    await fn(store);
  } finally {
    await close();
  }
}

async function installed(store: Store, locationId = "loc-1"): Promise<void> {
  await store.tokens.save({ locationId, companyId: "co-1", accessToken: "at", refreshToken: "rt", expiresAt: T0 + 86_400_000 }, T0);
}

/** The cases any store must pass, whatever database holds it. */
export function storeCases(factory: StoreFactory): void {
  // `uses`: the stores a case touches, as it says of itself (every store implements them all).
  const it = (name: string, _uses: (keyof Store)[], fn: (store: Store) => Promise<void>) => {
    test(`${factory.name}: ${name}`, () => using(factory, fn));
  };

  it("a message enqueued twice is one job", ["jobs"], async (store) => {
    expect(await store.jobs.enqueue(message(1), T0)).toBe(true);
    expect(await store.jobs.enqueue(message(1), T0 + 1, true)).toBe(false);
    expect(await store.jobs.counts()).toEqual({ queued: 1 });
    expect((await store.jobs.get("msg-1"))?.message).toEqual(message(1));
  });

  it("writes made together commit together, each with its own answer", ["jobs"], async (store) => {
    const answers = await Promise.all([1, 2, 3, 1].map((n) => store.jobs.enqueue(message(n), T0)));
    // Of two writes of one message at once, one is the job: which one is the database's order
    // (several connections on PostgreSQL), not necessarily the callers'.
    expect([answers[1], answers[2], answers[0] !== answers[3]]).toEqual([true, true, true]);
    expect((await store.jobs.due(T0, 10)).map((j) => j.state)).toEqual(["queued", "queued", "queued"]);
  });

  it("a claimed job is sending, its key kept; a second claim is refused", ["jobs", "gatewayKeys"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    const job = (await store.jobs.get("msg-1"))!;
    const claim = { idempotencyKey: "idem-1", apiKeyTag: "tag-1" };
    expect(await store.jobs.claimForSending(job.id, T0 + 1, claim, { masked: "ab…yz", apiKey: "key-1" })).toBe(true);
    expect(await store.jobs.claimForSending(job.id, T0 + 2, claim)).toBe(false);
    expect(await store.jobs.byId(job.id)).toMatchObject({ state: "sending", idempotencyKey: "idem-1", apiKeyTag: "tag-1" });
    expect(await store.gatewayKeys.sentWith("tag-1")).toBe("key-1");
  });

  it("interrupted sends go again within their own gateway's cutoff; the rest fail", ["jobs"], async (store) => {
    const sends = [[1, "cast", T0 + 10], [2, "cast", T0], [3, "android:dev-1", T0 + 10], [4, "other", T0 + 10]] as const;
    for (const [n, gateway, at] of sends) {
      await store.jobs.enqueue(message(n), at);
      expect(await store.jobs.claimForSending((await store.jobs.get(`msg-${n}`))!.id, at, { idempotencyKey: `idem-${n}`, apiKeyTag: "tag", gateway })).toBe(true);
    }
    const { resumed, failed } = await store.jobs.recoverInterrupted(T0 + 20, { cast: T0 + 5, android: T0 + 5 });
    expect(resumed).toBe(2);
    expect(failed.map((f) => f.messageId).sort()).toEqual(["msg-2", "msg-4"]);
    expect(await store.jobs.get("msg-3")).toMatchObject({ state: "queued", idempotencyKey: "idem-3" });
    expect(await store.jobs.get("msg-2")).toMatchObject({ state: "reporting", outcome: "failed", errorCode: "delivery_unknown" });
  });

  it("a result then its report settle the job", ["jobs"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    await store.jobs.claimForSending(id, T0, { idempotencyKey: "idem-1", apiKeyTag: "tag-1" });
    await store.jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: "gw-1" }, T0 + 1, { at: T0 + 2, deadline: T0 + 9 });
    expect(await store.jobs.recordReceipt(id, { outcome: "delivered", receipt: "DELIVERED" }, T0 + 3)).toBe(true);
    expect(await store.jobs.recordReceipt(id, { outcome: "failed", receipt: "FAILED" }, T0 + 4)).toBe(false);
    expect(await store.jobs.byId(id)).toMatchObject({ state: "reporting", outcome: "delivered" });
    await store.jobs.reported(id, "delivered", T0 + 5);
    expect(await store.jobs.byId(id)).toMatchObject({ state: "done" });
  });

  it("a held job waits off the queue until its key is woken", ["jobs", "messages"], async (store) => {
    await store.jobs.enqueue(message(1), T0);
    const { id } = (await store.jobs.get("msg-1"))!;
    await store.jobs.markHeld(id, "key refused", T0 + 60_000, T0);
    expect(await store.jobs.due(T0 + 1, 10)).toEqual([]);
    expect((await store.messages.get("msg-1"))?.status).toBe("held");
    expect(await store.jobs.wakeHeld(T0 + 2)).toBe(1);
    expect((await store.jobs.due(T0 + 2, 10)).map((j) => j.id)).toEqual([id]);
  });

  it("a test message is refused past its limit, with the wait", ["jobs"], async (store) => {
    const limit = { count: 2, windowMs: 3_600_000, prefix: "msg-" };
    expect(await store.jobs.enqueueLimited(message(1), T0, limit)).toBe(0);
    expect(await store.jobs.enqueueLimited(message(2), T0 + 1000, limit)).toBe(0);
    expect(await store.jobs.enqueueLimited(message(3), T0 + 2000, limit)).toBe(3_600_000 - 2000);
    expect(await store.jobs.get("msg-3")).toBeUndefined();
  });

  it("a reply is stored once by its dedupe key", ["replies"], async (store) => {
    expect(await store.replies.receive(reply(1), T0)).toBeUndefined();
    expect(await store.replies.receive(reply(2, { dedupeKey: "key-1" }), T0)).toBe("in-1");
    expect(await store.replies.counts()).toMatchObject({ queued: 1 });
  });

  it("a stop word opts its sender out with the reply, a start word back in", ["replies", "optOuts"], async (store) => {
    await store.replies.receive(reply(1, { optOut: "stop" }), T0);
    expect(await store.optOuts.has("loc-1", "+639171234567")).toBe(true);
    expect(await store.optOuts.list("loc-1")).toEqual([{ locationId: "loc-1", phone: "+639171234567", by: "reply", at: T0 }]);
    await store.replies.receive(reply(2, { optOut: "start" }), T0 + 1);
    expect(await store.optOuts.has("loc-1", "+639171234567")).toBe(false);
  });

  it("an unrouted reply is routed once, to an installed location", ["replies", "optOuts", "tokens"], async (store) => {
    await store.replies.receive(reply(1, { locationId: "", routedBy: "", optOut: "stop" }), T0);
    expect(await store.optOuts.has("loc-1", "+639171234567")).toBe(false);
    expect(await store.replies.assign("in-9", "loc-1", T0)).toEqual({ why: "not_found" });
    expect(await store.replies.assign("in-1", "loc-1", T0)).toEqual({ why: "not_installed" });
    await installed(store);
    expect(await store.replies.assign("in-1", "loc-1", T0)).toBeUndefined();
    expect(await store.optOuts.has("loc-1", "+639171234567")).toBe(true);
    expect(await store.replies.assign("in-1", "loc-1", T0)).toEqual({ why: "routed", locationId: "loc-1" });
  });

  it("opt-outs keep who listed a number first", ["optOuts"], async (store) => {
    expect(await store.optOuts.add({ locationId: "loc-1", phone: "+639171234567", by: "operator", at: T0 })).toBe(true);
    expect(await store.optOuts.add({ locationId: "loc-1", phone: "+639171234567", by: "reply", at: T0 + 1 })).toBe(false);
    expect(await store.optOuts.counts()).toEqual({ reply: 0, operator: 1, page: 0 });
    expect(await store.optOuts.remove("loc-1", "+639171234567")).toBe(true);
    expect(await store.optOuts.remove("loc-1", "+639171234567")).toBe(false);
  });

  it("a location's tokens are saved, leased once and refreshed", ["tokens"], async (store) => {
    await installed(store);
    const record = (await store.tokens.get("loc-1"))!;
    expect(record).toMatchObject({ locationId: "loc-1", companyId: "co-1", accessToken: "at", refreshToken: "rt", uninstalledAt: 0 });
    expect(await store.tokens.tryLease("loc-1", record.serial, T0, T0 + 1000)).toBe(true);
    expect(await store.tokens.tryLease("loc-1", record.serial, T0, T0 + 1000)).toBe(false);
    expect(await store.tokens.updateTokens("loc-1", "at-2", "rt-2", T0 + 2, T0 + 1)).toBe(true);
    expect(await store.tokens.get("loc-1")).toMatchObject({ accessToken: "at-2", refreshToken: "rt-2" });
    expect(await store.tokens.markUninstalled("loc-1", T0 + 2)).toBe(true);
    expect(await store.tokens.markUninstalled("loc-1", T0 + 3)).toBe(false);
    expect(await store.tokens.ids()).toEqual(["loc-1"]);
  });

  it("a write the store refuses rejects its own promise only", ["tokens", "jobs"], async (store) => {
    const refused = store.tokens.save({ locationId: "", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    const fine = store.jobs.enqueue(message(1), T0);
    await expect(refused).rejects.toThrow(/without a location_id/);
    expect(await fine).toBe(true);
  });

  registryCases(it);
  usageCases(it);
  inboundCases(it);
  logCases(it);
  jobCases(it);
  budgetCases(it);
  serverCases(it);
}
