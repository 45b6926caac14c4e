import { expect } from "vitest";
import type { Case } from "./store-cases-registry.ts";

const T0 = 1_700_000_000_000;
const MINUTE = 60_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The contract's cases of servers' heartbeats, leases and the settings page's sessions (store-cases.ts runs them). */
export function serverCases(it: Case): void {
  it("a server's heartbeat is listed with its age until it is gone", ["servers"], async (store) => {
    await store.servers.beat("s-1", "host-a");
    await store.servers.beat("s-2", "host-b");
    await store.servers.beat("s-1", "host-a2");
    const listed = await store.servers.list();
    expect(listed.map((s) => [s.id, s.address])).toEqual([["s-1", "host-a2"], ["s-2", "host-b"]]);
    for (const s of listed) expect(s.ageMs).toBeGreaterThanOrEqual(0);
    expect(listed[0]!.ageMs).toBeLessThan(10_000);
    expect((await store.servers.others("s-1", MINUTE)).map((s) => s.id)).toEqual(["s-2"]);
    await store.servers.gone("s-2");
    expect(await store.servers.others("s-1", MINUTE)).toEqual([]);
    expect((await store.servers.list()).map((s) => s.id)).toEqual(["s-1"]);
  });

  it("a server whose heartbeat is older than the limit is not among the others", ["servers"], async (store) => {
    await store.servers.beat("s-2", "host-b");
    await pause(60);
    expect(await store.servers.others("s-1", 20)).toEqual([]);
    expect((await store.servers.others("s-1", MINUTE)).map((s) => s.id)).toEqual(["s-2"]);
    expect((await store.servers.list())[0]!.ageMs).toBeGreaterThanOrEqual(50);
  });

  it("a lease has one holder until it lapses, renewed by its own holder in the same term", ["leases"], async (store) => {
    expect(await store.leases.take("leader", "s-1", MINUTE)).toBe(1);
    expect(await store.leases.take("leader", "s-2", MINUTE)).toBeUndefined();
    expect(await store.leases.take("leader", "s-1", MINUTE)).toBe(1);
    expect(await store.leases.take("other", "s-2", MINUTE)).toBe(1);
    const listed = await store.leases.list();
    expect(listed.map((l) => [l.name, l.holder, l.epoch])).toEqual([["leader", "s-1", 1], ["other", "s-2", 1]]);
    expect(listed[0]!.leftMs).toBeGreaterThan(MINUTE - 10_000);
  });

  it("a lapsed or released lease is taken over in a new term", ["leases"], async (store) => {
    expect(await store.leases.take("leader", "s-1", 30)).toBe(1);
    await pause(60);
    expect((await store.leases.list())[0]!.leftMs).toBeLessThanOrEqual(0);
    expect(await store.leases.take("leader", "s-2", MINUTE)).toBe(2);
    await store.leases.release("leader", "s-1"); // not its holder now: nothing changes
    expect(await store.leases.take("leader", "s-1", MINUTE)).toBeUndefined();
    await store.leases.release("leader", "s-2");
    expect(await store.leases.take("leader", "s-1", MINUTE)).toBe(3);
  });

  it("a one-off lease is dropped by its holder only", ["leases"], async (store) => {
    expect(await store.leases.take("exchange:a", "s-1", MINUTE)).toBe(1);
    await store.leases.drop("exchange:a", "s-2");
    expect((await store.leases.list()).map((l) => l.name)).toEqual(["exchange:a"]);
    await store.leases.drop("exchange:a", "s-1");
    expect(await store.leases.list()).toEqual([]);
  });

  it("a session is found by its token's hash until it expires, one per user and location", ["appSessions"], async (store) => {
    const session = { locationId: "loc-1", userId: "u-1", role: "admin", expiresAt: T0 + MINUTE };
    expect(await store.appSessions.open("hash-1", session, T0, 10)).toBe(true);
    expect(await store.appSessions.get("hash-1", T0)).toEqual(session);
    expect(await store.appSessions.get("hash-1", T0 + MINUTE)).toBeUndefined();
    expect(await store.appSessions.open("hash-2", { ...session, role: "user" }, T0, 10)).toBe(true);
    expect(await store.appSessions.get("hash-1", T0)).toBeUndefined(); // replaced
    expect(await store.appSessions.get("hash-2", T0)).toMatchObject({ role: "user" });
    await store.appSessions.drop("hash-2");
    expect(await store.appSessions.get("hash-2", T0)).toBeUndefined();
  });

  it("sessions beyond the bound are refused until some expire, and expired ones are pruned", ["appSessions"], async (store) => {
    const open = (hash: string, userId: string, expiresAt: number, now = T0) =>
      store.appSessions.open(hash, { locationId: "loc-1", userId, role: "user", expiresAt }, now, 2);
    expect(await open("h-a", "a", T0 + 10)).toBe(true);
    expect(await open("h-b", "b", T0 + MINUTE)).toBe(true);
    expect(await open("h-c", "c", T0 + MINUTE)).toBe(false);
    expect(await open("h-a2", "a", T0 + MINUTE)).toBe(true); // its own is replaced, not counted
    expect(await open("h-c", "c", T0 + 2 * MINUTE, T0 + MINUTE)).toBe(true); // the others expired
    expect(await store.appSessions.prune(T0 + MINUTE)).toBe(2);
    expect(await store.appSessions.get("h-c", T0 + MINUTE)).toMatchObject({ userId: "c" });
  });

  it("a key's unsubscribed list is stored for every server, replaced by the next read, a failed read as null", ["unsubscribed"], async (store) => {
    expect(await store.unsubscribed.get("tag-1")).toBeUndefined();
    const entries = [{ phone: "+639171234567", senderId: "MYAPP" }, { phone: "+639181234567", senderId: "OTHER" }];
    await store.unsubscribed.put("tag-1", entries);
    await pause(30);
    const read = await store.unsubscribed.get("tag-1");
    expect(read?.entries).toEqual(entries);
    expect(read?.ageMs).toBeGreaterThanOrEqual(25);
    expect(read?.ageMs).toBeLessThan(MINUTE);
    expect(await store.unsubscribed.get("tag-2")).toBeUndefined();

    const before = Date.now();
    await store.unsubscribed.put("tag-1", null);
    const failed = await store.unsubscribed.get("tag-1");
    expect(failed?.entries).toBeNull();
    expect(failed?.ageMs).toBeLessThanOrEqual(Date.now() - before + 2); // read again now
    await store.unsubscribed.put("tag-1", []);
    expect((await store.unsubscribed.get("tag-1"))?.entries).toEqual([]);
  });

  it("a key's unsubscribed list no read has renewed for a while is pruned; a recent one stays", ["unsubscribed"], async (store) => {
    await store.unsubscribed.put("tag-old", []);
    await pause(1000);
    await store.unsubscribed.put("tag-new", []);
    expect(await store.unsubscribed.prune(500)).toBe(1);
    expect(await store.unsubscribed.get("tag-old")).toBeUndefined();
    expect((await store.unsubscribed.get("tag-new"))?.entries).toEqual([]);
    expect(await store.unsubscribed.prune(500)).toBe(0);
  });
}
