import { expect } from "vitest";
import type { Store } from "../../src/store/contract.ts";

/** Registers one case: its name, the stores it uses, what it does on a fresh store. */
export type Case = (name: string, uses: (keyof Store)[], fn: (store: Store) => Promise<void>) => void;

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;

/** The contract's cases of the locations' and agencies' records, the keys and the outages (store-cases.ts runs them). */
export function registryCases(it: Case): void {
  it("an agency's token is saved, leased once and replaced by a reinstall", ["companies"], async (store) => {
    await store.companies.save({ companyId: "co-1", accessToken: "at", refreshToken: "rt", expiresAt: T0 + DAY }, T0);
    const record = (await store.companies.get("co-1"))!;
    expect(record).toMatchObject({ companyId: "co-1", accessToken: "at", refreshToken: "rt", installedAt: T0, refreshError: "" });
    expect(await store.companies.tryLease("co-1", record.serial, T0, T0 + 1000)).toBe(true);
    await store.companies.releaseLease("co-1", record.serial, "invalid_grant");
    expect(await store.companies.get("co-1")).toMatchObject({ refreshError: "invalid_grant" });
    await store.companies.save({ companyId: "co-1", accessToken: "at-2", refreshToken: "rt-2", expiresAt: T0 + 2 * DAY }, T0 + 1);
    const again = (await store.companies.get("co-1"))!;
    expect(again).toMatchObject({ accessToken: "at-2", refreshError: "", installedAt: T0, updatedAt: T0 + 1 });
    expect(await store.companies.tryLease("co-1", record.serial, T0 + 2, T0 + 1000)).toBe(false); // the pair changed
    expect(await store.companies.ids()).toEqual(["co-1"]);
    expect(await store.companies.delete("co-1")).toBe(true);
    expect(await store.companies.get("co-1")).toBeUndefined();
  });

  it("a reinstall keeps a location's settings and an operator's withdrawal", ["tokens"], async (store) => {
    const token = { locationId: "loc-1", companyId: "co-1", accessToken: "at", refreshToken: "rt", expiresAt: T0 + DAY, name: "Shop" };
    await store.tokens.save(token, T0, true);
    expect(await store.tokens.setConfig("loc-1", { senderId: "SHOP", smsApiKey: "key-1" }, T0 + 1)).toBe(true);
    expect(await store.tokens.setConfig("loc-9", { senderId: "X" }, T0 + 1)).toBe(false);
    expect(await store.tokens.setApproved("loc-1", false, T0 + 2)).toBe(true);
    await store.tokens.markUninstalled("loc-1", T0 + 3);
    await store.tokens.save({ ...token, name: undefined }, T0 + 4, true);
    expect(await store.tokens.get("loc-1")).toMatchObject({
      senderId: "SHOP", smsApiKey: "key-1", approved: false, approvedBy: "withdrawn", uninstalledAt: 0, name: "Shop", installedAt: T0,
    });
    const [listing] = await store.tokens.listings();
    expect(listing).toMatchObject({ locationId: "loc-1", smsApiKey: "key-1", smsApiKeyError: "", installedAt: new Date(T0).toISOString(), uninstalledAt: null });
  });

  it("a company's locations and a location's company are found without opening a token", ["tokens"], async (store) => {
    for (const id of ["loc-2", "loc-1"]) await store.tokens.save({ locationId: id, companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
    await store.tokens.setName("loc-2", "Second");
    expect(await store.tokens.ofCompany("co-1")).toEqual([
      { locationId: "loc-1", name: "", uninstalledAt: 0, refreshError: "" },
      { locationId: "loc-2", name: "Second", uninstalledAt: 0, refreshError: "" },
    ]);
    expect(await store.tokens.companyOf("loc-2")).toBe("co-1");
    expect(await store.tokens.companyOf("loc-9")).toBeUndefined();
    expect((await store.tokens.list()).map((t) => t.locationId)).toEqual(["loc-1", "loc-2"]);
  });

  it("a key's hold keeps its first time until released; a balance is recorded", ["gatewayKeys"], async (store) => {
    await store.gatewayKeys.held("tag-1", "ab…", { since: T0, status: 401, reason: "refused" });
    await store.gatewayKeys.held("tag-1", "ab…", { since: T0 + 5, status: 403, reason: "again" });
    await store.gatewayKeys.balance("tag-1", "ab…", T0 + 6, { credits: 12.5 });
    await store.gatewayKeys.balance("tag-2", "cd…", T0 + 6, { error: "timeout" });
    expect(await store.gatewayKeys.list()).toEqual([
      { keyTag: "tag-1", keyMasked: "ab…", heldSince: T0, heldStatus: 403, heldReason: "again", balance: 12.5, balanceAt: T0 + 6, balanceError: null },
      { keyTag: "tag-2", keyMasked: "cd…", heldSince: null, heldStatus: null, heldReason: null, balance: null, balanceAt: T0 + 6, balanceError: "timeout" },
    ]);
    await store.gatewayKeys.clearHolds();
    expect((await store.gatewayKeys.list())[0]).toMatchObject({ heldSince: null, heldStatus: null });
  });

  it("a key a send went with is kept until no unsettled job needs it", ["gatewayKeys"], async (store) => {
    await store.gatewayKeys.keep("tag-1", "ab…", "key-1");
    await store.gatewayKeys.keep("tag-1", "ab…", "key-1");
    expect(await store.gatewayKeys.sentWith("tag-1")).toBe("key-1");
    expect(await store.gatewayKeys.sentWith("tag-2")).toBeUndefined();
    expect(await store.gatewayKeys.forgetUnused()).toBe(1);
    expect(await store.gatewayKeys.sentWith("tag-1")).toBeUndefined();
  });

  it("an outage is recorded, goes on, ends, and a new serve clears the rest", ["outageRecords"], async (store) => {
    const outage = { remote: "cast", since: T0, kind: "timeout", reason: "no answer", failedCalls: 1, lastFailedAt: T0 };
    await store.outageRecords.save(outage);
    await store.outageRecords.save({ ...outage, since: T0 + 9, failedCalls: 3, lastFailedAt: T0 + 9 });
    await store.outageRecords.save({ ...outage, remote: "crm", since: T0 + 1 });
    expect(await store.outageRecords.list()).toEqual([{ ...outage, failedCalls: 3, lastFailedAt: T0 + 9 }, { ...outage, remote: "crm", since: T0 + 1 }]);
    expect(await store.outageRecords.waits("cast")).toBe(0);
    await store.outageRecords.end("cast");
    expect((await store.outageRecords.list()).map((o) => o.remote)).toEqual(["crm"]);
    await store.outageRecords.clear();
    expect(await store.outageRecords.list()).toEqual([]);
  });

  it("opt-outs are listed newest first and counted by who listed them", ["optOuts"], async (store) => {
    await store.optOuts.add({ locationId: "loc-1", phone: "+639170000001", by: "page", at: T0 });
    await store.optOuts.add({ locationId: "loc-1", phone: "+639170000002", by: "reply", at: T0 + 1 });
    await store.optOuts.add({ locationId: "loc-2", phone: "+639170000001", by: "reply", at: T0 + 2 });
    expect((await store.optOuts.list("loc-1")).map((o) => o.phone)).toEqual(["+639170000002", "+639170000001"]);
    expect(await store.optOuts.counts()).toEqual({ reply: 2, operator: 0, page: 1 });
    expect(await store.optOuts.has("loc-2", "+639170000002")).toBe(false);
  });
}
