import { describe, expect, test } from "vitest";
import { createOptOutList } from "../../src/core/opt-out-list.ts";
import { createOptOutStore } from "../../src/db/optouts.ts";
import { useTempDb } from "../helpers/db.ts";

const ctx = useTempDb("bridge-optouts-");

describe("the opt-out store", () => {
  test("a number is listed per location until removed", () => {
    const store = createOptOutStore(ctx.db);
    expect(store.add({ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 1000 })).toBe(true);

    expect(store.has("loc-1", "+639171234567")).toBe(true);
    expect(store.has("loc-2", "+639171234567")).toBe(false);
    expect(store.list("loc-1")).toEqual([{ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 1000 }]);
    expect(store.list("loc-2")).toEqual([]);

    expect(store.remove("loc-1", "+639171234567")).toBe(true);
    expect(store.remove("loc-1", "+639171234567")).toBe(false);
    expect(store.has("loc-1", "+639171234567")).toBe(false);
  });

  test("a second add keeps who listed it first, and when", () => {
    const store = createOptOutStore(ctx.db);
    store.add({ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 1000 });
    expect(store.add({ locationId: "loc-1", phone: "+639171234567", by: "operator", at: 2000 })).toBe(false);
    expect(store.list("loc-1")).toEqual([{ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 1000 }]);
  });

  test("lists the newest first, and counts by who listed", () => {
    const store = createOptOutStore(ctx.db);
    store.add({ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 1000 });
    store.add({ locationId: "loc-1", phone: "+639181234567", by: "operator", at: 3000 });
    store.add({ locationId: "loc-2", phone: "+639171234567", by: "reply", at: 2000.4 });
    expect(store.list("loc-1").map((o) => o.phone)).toEqual(["+639181234567", "+639171234567"]);
    expect(store.list("loc-2")[0]?.at).toBe(2001);
    expect(store.counts()).toEqual({ reply: 2, operator: 1, page: 0 });
  });

  test("refuses who it does not know", () => {
    const store = createOptOutStore(ctx.db);
    const by = "cast" as "reply";
    expect(() => store.add({ locationId: "loc-1", phone: "+639171234567", by, at: 1 })).toThrow(/CHECK/);
  });
});

describe("the OptOutList over it", () => {
  test("any written form of a Philippine mobile is the same number", async () => {
    const store = createOptOutStore(ctx.db);
    const list = createOptOutList(ctx.store.optOuts, () => 5000);
    await list.add("loc-1", "0917 123 4567", "reply");

    expect(store.list("loc-1")).toEqual([{ locationId: "loc-1", phone: "+639171234567", by: "reply", at: 5000 }]);
    expect(await list.has("loc-1", "+639171234567")).toBe(true);
    expect(await list.has("loc-1", "09171234567")).toBe(true);
    expect(await list.has("loc-2", "+639171234567")).toBe(false);

    await list.remove("loc-1", "+63 917-123-4567");
    expect(await list.has("loc-1", "09171234567")).toBe(false);
  });

  test("a number that is no Philippine mobile is kept as written", async () => {
    const store = createOptOutStore(ctx.db);
    const list = createOptOutList(ctx.store.optOuts, () => 1);
    await list.add("loc-1", " +14155550100 ", "reply");
    expect(store.list("loc-1")[0]?.phone).toBe("+14155550100");
    expect(await list.has("loc-1", "+14155550100")).toBe(true);
  });
});
