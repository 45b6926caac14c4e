import { expect } from "vitest";
import type { Store } from "../../src/store/contract.ts";
import type { NewInbound } from "../../src/store/types.ts";
import { POSTING_HOLD_MS } from "../../src/db/inbound.ts";
import type { Case } from "./store-cases-registry.ts";
import { message, reply } from "./store-cases.ts";

const T0 = 1_700_000_000_000;
/** T0's month in Asia/Manila, where the stores count usage by default. */
const MONTH = "2023-11";
const PHONE = "+639171234567";

/** Receives reply `n` at `at`; its row id. */
async function received(store: Store, n: number, at: number, change: Partial<NewInbound> = {}): Promise<number> {
  expect(await store.replies.receive(reply(n, change), at)).toBeUndefined();
  return (await store.replies.get(`in-${n}`))!.id;
}

async function install(store: Store, locationId: string): Promise<void> {
  await store.tokens.save({ locationId, companyId: "co-1", accessToken: "at", refreshToken: "rt", expiresAt: T0 + 86_400_000 }, T0);
}

/** The contract's cases of the replies and their queue (store-cases.ts runs them). */
export function inboundCases(it: Case): void {
  it("a reply is stored as given, found by its ids; stored as it is only once", ["replies"], async (store) => {
    const id = await received(store, 1, T0 + 5);
    expect(await store.replies.idOfKey("key-1")).toBe("in-1");
    expect(await store.replies.idOfKey("key-9")).toBeUndefined();
    const row = { ...reply(1), id, state: "queued", contactId: null, crmMessageId: null, attempts: 0, looks: 0, error: null, createdAt: T0 + 5, updatedAt: T0 + 5 };
    expect(await store.replies.get("in-1")).toEqual(row);
    expect(await store.replies.byId(id)).toEqual(row);
    expect(await store.replies.byId(id + 100)).toBeUndefined();
    expect(await store.replies.insert({ ...reply(2, { dedupeKey: "key-1" }), state: "queued" }, T0)).toBe(false);
    expect(await store.replies.insert({ ...reply(3, { locationId: "", routedBy: "" }), state: "unrouted" }, T0)).toBe(true);
    expect(await store.replies.get("in-2")).toBeUndefined();
    expect(await store.replies.counts()).toEqual({ unrouted: 1, queued: 1, posting: 0, done: 0, dead: 0 });
  });

  it("a reply counts in usage once it has its location, by its source", ["replies", "usage", "tokens"], async (store) => {
    await received(store, 1, T0);
    await received(store, 2, T0, { source: "android" });
    await received(store, 3, T0, { locationId: "", routedBy: "" });
    expect(await store.replies.receive(reply(4, { dedupeKey: "key-1" }), T0)).toBe("in-1");
    const replies = async () => (await store.usage.list({})).map((u) => [u.locationId, u.month, u.gateway, u.replies, u.messages]);
    expect(await replies()).toEqual([["loc-1", MONTH, "android", 1, 0], ["loc-1", MONTH, "api", 1, 0]]);
    expect(await store.replies.route("in-3", "loc-2", T0 + 1)).toBe(true);
    expect(await store.replies.route("in-3", "loc-2", T0 + 2)).toBe(false);
    expect(await store.replies.get("in-3")).toMatchObject({ locationId: "loc-2", routedBy: "operator", state: "queued", updatedAt: T0 + 1 });
    await received(store, 5, T0, { locationId: "", routedBy: "" });
    await install(store, "loc-2");
    expect(await store.replies.assign("in-5", "loc-2", T0)).toBeUndefined();
    expect((await replies()).slice(2)).toEqual([["loc-2", MONTH, "api", 2, 0]]);
  });

  it("a contact's replies are due one at a time, in order; nextDue says when the next is", ["replies"], async (store) => {
    expect(await store.replies.nextDue()).toBeUndefined();
    const first = await received(store, 1, T0);
    const second = await received(store, 2, T0 + 1);
    const other = await received(store, 3, T0 + 2, { phone: "+639170000000" });
    await received(store, 4, T0, { locationId: "", routedBy: "" });
    expect(await store.replies.due(T0 + 10, 10)).toEqual([first, other]);
    expect(await store.replies.due(T0 + 10, 1)).toEqual([first]);
    expect(await store.replies.due(T0, 10)).toEqual([first]);
    expect(await store.replies.nextDue()).toBe(T0);
    expect(await store.replies.markPosting(first, T0 + 3)).toBe(true);
    expect(await store.replies.markPosting(first, T0 + 3)).toBe(false);
    // Posting: left to the server posting it (its contact's next reply waits behind it) until its hold ends.
    expect(await store.replies.due(T0 + 10, 10)).toEqual([other]);
    expect(await store.replies.due(T0 + 3 + POSTING_HOLD_MS, 10)).toEqual([other, first]);
    // A server that starts alone looks up now what a stopped one was posting.
    expect(await store.replies.resumePosting(T0 + 11)).toBe(1);
    expect(await store.replies.due(T0 + 11, 10)).toEqual([other, first]);
    await store.replies.posted(first, "crm-1", T0 + 4);
    expect(await store.replies.due(T0 + 10, 10)).toEqual([second, other]);
    await store.replies.retryLater(second, T0 + 100, "busy", T0 + 5);
    await store.replies.retryLater(second, T0 + 100, "no token", T0 + 6, false);
    expect(await store.replies.byId(second)).toMatchObject({ state: "queued", attempts: 1, error: "no token", updatedAt: T0 + 6 });
    expect(await store.replies.due(T0 + 10, 10)).toEqual([other]);
    expect(await store.replies.nextDue()).toBe(T0 + 2);
    await store.replies.giveUp(other, "refused", T0 + 7);
    expect(await store.replies.byId(other)).toMatchObject({ state: "dead", error: "refused", updatedAt: T0 + 7 });
    expect(await store.replies.nextDue()).toBe(T0 + 100);
  });

  it("a post with no clear answer is looked up later; a HighLevel message settles one reply", ["replies"], async (store) => {
    const id = await received(store, 1, T0);
    const other = await received(store, 2, T0, { phone: "+639170000000" });
    await store.replies.lookLater(id, T0 + 50, "timeout", T0 + 1, true, 1);
    expect(await store.replies.byId(id)).toMatchObject({ state: "queued", attempts: 0, looks: 0 }); // not posting: untouched
    await store.replies.setContact(id, "contact-1", T0 + 1);
    await store.replies.markPosting(id, T0 + 2);
    await store.replies.setContact(id, "contact-2", T0 + 3);
    await store.replies.lookLater(id, T0 + 50, "timeout", T0 + 4, true, 2);
    expect(await store.replies.byId(id)).toMatchObject({ state: "posting", contactId: "contact-1", attempts: 1, looks: 2, error: "timeout", updatedAt: T0 + 4 });
    expect(await store.replies.due(T0 + 49, 10)).toEqual([other]);
    expect(await store.replies.due(T0 + 50, 10)).toEqual([other, id]); // by when due
    await store.replies.retryLater(id, T0 + 60, "not found", T0 + 5);
    await store.replies.markPosting(id, T0 + 60);
    expect(await store.replies.byId(id)).toMatchObject({ state: "posting", attempts: 2, looks: 0 });
    await store.replies.posted(id, "crm-1", T0 + 61);
    expect(await store.replies.byId(id)).toMatchObject({ state: "done", crmMessageId: "crm-1", error: null, updatedAt: T0 + 61 });
    await store.replies.giveUp(id, "late", T0 + 62);
    await store.replies.posted(other, "crm-2", T0 + 62); // not posting: untouched
    expect(await store.replies.counts()).toEqual({ unrouted: 0, queued: 1, posting: 0, done: 1, dead: 0 });
    expect(await store.replies.claimed(id, "crm-1")).toBe(false);
    expect(await store.replies.claimed(other, "crm-1")).toBe(true);
    expect(await store.replies.claimed(other, "crm-2")).toBe(false);
  });

  it("replies are listed newest first, by location, state and time", ["replies"], async (store) => {
    const ids = [await received(store, 1, T0), await received(store, 2, T0 + 1, { locationId: "loc-2" })];
    ids.push(await received(store, 3, T0 + 1, { locationId: "", routedBy: "" }), await received(store, 4, T0 + 2));
    const listed = async (filter: Parameters<Store["replies"]["list"]>[0]) => (await store.replies.list(filter)).map((r) => r.id);
    expect(await listed({ limit: 10 })).toEqual([ids[3], ids[2], ids[1], ids[0]]);
    expect(await listed({ limit: 2 })).toEqual([ids[3], ids[2]]);
    expect(await listed({ limit: 10, locationId: "loc-1" })).toEqual([ids[3], ids[0]]);
    expect(await listed({ limit: 10, states: ["unrouted", "dead"] })).toEqual([ids[2]]);
    expect(await listed({ limit: 10, states: [] })).toEqual([]);
    expect(await listed({ limit: 10, since: T0 + 1, locationId: "loc-2", states: ["queued"] })).toEqual([ids[1]]);
    expect((await store.replies.list({ limit: 1 }))[0]).toEqual(await store.replies.byId(ids[3]!));
  });

  it("finished replies last changed before the cut are pruned, in batches", ["replies"], async (store) => {
    const ids = [];
    for (let n = 1; n <= 5; n++) ids.push(await received(store, n, T0, n === 5 ? { locationId: "", routedBy: "" } : { phone: `+63917000000${n}` }));
    for (const id of ids.slice(0, 2)) {
      await store.replies.markPosting(id, T0 + 1);
      await store.replies.posted(id, `crm-${id}`, T0 + 2);
    }
    await store.replies.giveUp(ids[2]!, "refused", T0 + 2);
    await store.replies.giveUp(ids[3]!, "refused", T0 + 9);
    expect(await store.replies.prune(T0 + 5, 2)).toBe(2);
    expect(await store.replies.prune(T0 + 5, 2)).toBe(1);
    expect(await store.replies.prune(T0 + 5, 2)).toBe(0);
    expect(await store.replies.list({ limit: 10 }).then((rows) => rows.map((r) => r.inboundId).sort())).toEqual(["in-4", "in-5"]);
  });

  it("a location is installed until it is uninstalled", ["replies", "tokens"], async (store) => {
    expect(await store.replies.installed("loc-1")).toBe(false);
    await install(store, "loc-1");
    expect(await store.replies.installed("loc-1")).toBe(true);
    await store.tokens.markUninstalled("loc-1", T0 + 1);
    expect(await store.replies.installed("loc-1")).toBe(false);
  });

  it("a sender's last message names its location: either phone form, the key, installed only", ["replies", "jobs", "tokens"], async (store) => {
    for (const location of ["loc-1", "loc-2"]) await install(store, location);
    await store.jobs.enqueue(message(1, "loc-1"), T0);
    await store.jobs.enqueue({ ...message(2, "loc-2"), phone: "09171234567" }, T0 + 1);
    await store.jobs.enqueue({ ...message(3, "loc-9"), phone: PHONE }, T0 + 2);
    expect(await store.replies.lastSentTo(PHONE, "09171234567")).toBe("loc-2");
    expect(await store.replies.lastSentTo(PHONE, PHONE)).toBe("loc-1");
    expect(await store.replies.lastSentTo("+639170000000", "09170000000")).toBeUndefined();
    const { id } = (await store.jobs.get("msg-1"))!;
    await store.jobs.claimForSending(id, T0 + 3, { idempotencyKey: "idem-1", apiKeyTag: "android:dev-1" });
    expect(await store.replies.lastSentTo(PHONE, "09171234567", "android:dev-1")).toBe("loc-1");
    expect(await store.replies.lastSentTo(PHONE, "09171234567", "android:dev-2")).toBeUndefined();
    await store.tokens.markUninstalled("loc-2", T0 + 4);
    expect(await store.replies.lastSentTo(PHONE, "09171234567")).toBe("loc-1");
  });
}
