import { expect } from "vitest";
import type { Case } from "./store-cases-registry.ts";

const T0 = 1_700_000_000_000;

/** The contract's cases of phones, monthly caps and alerts (store-cases.ts runs them). */
export function usageCases(it: Case): void {
  it("a phone is set only for a stored location; its secrets are shown only as set", ["phones", "tokens"], async (store) => {
    const phone = { gateway: "android" as const, url: "http://10.0.0.2:8080", user: "u", password: "pw", deviceId: "dev-1", signingKey: "sk" };
    expect(await store.phones.set("loc-1", phone, T0)).toBe(false);
    expect(await store.phones.get("loc-1")).toEqual({ locationId: "loc-1", gateway: "cast", url: "", user: "", password: "", deviceId: "", signingKey: "" });
    for (const id of ["loc-2", "loc-1"]) await store.tokens.save({ locationId: id, companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    expect(await store.phones.set("loc-1", phone, T0)).toBe(true);
    expect(await store.phones.set("loc-2", { ...phone, password: undefined }, T0)).toBe(true);
    expect(await store.phones.set("loc-2", { url: "http://10.0.0.3:8080" }, T0 + 1)).toBe(true);
    expect(await store.phones.get("loc-1")).toEqual({ locationId: "loc-1", ...phone });
    expect(await store.phones.describe("loc-2")).toMatchObject({
      locationId: "loc-2", gateway: "android", url: "http://10.0.0.3:8080", user: "u", deviceId: "dev-1", passwordSet: false, signingKeySet: true,
    });
    expect([...(await store.phones.describeAll()).keys()].sort()).toEqual(["loc-1", "loc-2"]);
    expect(await store.phones.locationsOfDevice("dev-1")).toEqual(["loc-1", "loc-2"]);
    expect((await store.phones.byDevice("dev-1")).map((p) => p.password)).toEqual(["pw", ""]);
    await store.phones.set("loc-2", { gateway: "cast" }, T0 + 2);
    expect((await store.phones.android()).map((p) => p.locationId)).toEqual(["loc-1"]);
    expect(await store.phones.describe("loc-9")).toBeUndefined();
  });

  it("a monthly cap is set only for a stored location, reached at once when 0, and removed", ["usage", "tokens"], async (store) => {
    expect(await store.usage.setCap("loc-1", 100, T0)).toBe(false);
    await store.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    await store.tokens.save({ locationId: "loc-2", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    expect(await store.usage.capOf("loc-1")).toBeUndefined();
    expect(await store.usage.setCap("loc-1", 100, T0)).toBe(true);
    expect(await store.usage.setCap("loc-2", 0, T0)).toBe(true);
    expect(await store.usage.setCap("loc-1", 50, T0 + 1)).toBe(true);
    expect(await store.usage.capOf("loc-1")).toBe(50);
    expect(await store.usage.used("loc-1", "2026-11")).toBe(0);
    expect(await store.usage.atOrOver("2026-11", 100)).toEqual([{ locationId: "loc-2", cap: 0, used: 0 }]);
    expect(await store.usage.setCap("loc-2", null, T0 + 2)).toBe(true);
    expect(await store.usage.capOf("loc-2")).toBeUndefined();
    expect(await store.usage.atOrOver("2026-11", 0)).toEqual([{ locationId: "loc-1", cap: 50, used: 0 }]);
    expect(await store.usage.list({})).toEqual([]);
  });

  it("a condition's alerts wait in order until delivered; an open condition is closed by its end", ["alertStore"], async (store) => {
    await store.alertStore.start("outage:cast", "Cast unreachable", "Cast is down", T0 + 5, T0);
    await store.alertStore.repeat("outage:cast", "Cast is still down", T0 + 10);
    expect(await store.alertStore.open()).toEqual([{ condition: "outage:cast", title: "Cast unreachable", startedAt: T0, repeatedAt: T0 + 10 }]);
    expect(await store.alertStore.waiting("outage:cast")).toBe(true);
    const first = (await store.alertStore.next())!;
    expect(first).toMatchObject({ condition: "outage:cast", kind: "started", text: "Cast is down", createdAt: T0 + 5, attempts: 0 });
    await store.alertStore.failed(first.id, "webhook refused", T0 + 11, T0 + 20);
    expect(await store.alertStore.next()).toMatchObject({ id: first.id, attempts: 1, nextAttemptAt: T0 + 20 });
    expect(await store.alertStore.health()).toEqual({ waiting: 2, lastDeliveredAt: null, lastError: "webhook refused", lastErrorAt: T0 + 11 });
    await store.alertStore.delivered(first.id, T0 + 21);
    expect(await store.alertStore.next()).toMatchObject({ kind: "repeat" });
    await store.alertStore.end("outage:cast", "Cast is back", T0 + 30);
    expect(await store.alertStore.open()).toEqual([]);
    expect(await store.alertStore.health()).toEqual({ waiting: 2, lastDeliveredAt: T0 + 21, lastError: null, lastErrorAt: null });
  });

  it("a test alert is recorded sent or waiting; only delivered alerts are pruned", ["alertStore"], async (store) => {
    const sent = await store.alertStore.test("a test", T0, true);
    const waiting = await store.alertStore.test("another", T0 + 1, false);
    expect(waiting).toBeGreaterThan(sent);
    expect((await store.alertStore.next())?.id).toBe(waiting);
    await store.alertStore.adopt("hold:tag-1", "Key held", T0);
    expect(await store.alertStore.waiting("hold:tag-1")).toBe(false);
    expect(await store.alertStore.prune(T0 + 100)).toBe(1);
    expect((await store.alertStore.next())?.id).toBe(waiting);
    expect(await store.alertStore.open()).toEqual([{ condition: "hold:tag-1", title: "Key held", startedAt: T0, repeatedAt: T0 }]);
  });
}
