import { expect, test } from "vitest";
import { CSV_COLUMNS, usageCsv, usageReport } from "../../src/core/operator/usage.ts";
import type { UsageRow } from "../../src/db/usage-store.ts";

const ROW: UsageRow = {
  locationId: "loc-1",
  name: "Acme",
  cap: null,
  month: "2026-03",
  gateway: "cast",
  messages: 4,
  parts: 5,
  replies: 0,
  delivered: 2,
  failed_invalid: 0,
  failed_not_sent: 0,
  failed_rejected: 1,
  failed_undelivered: 0,
  failed_unknown: 0,
  refused_opt_out: 1,
  refused_cap: 0,
};

const report = async (rows: UsageRow[]) => (await usageReport({ list: async () => rows }, { month: "2026-03" }, () => "2026-04", 0)).locations;

test("a location's gateways add up to its row, and the CSV splits their parts", async () => {
  const [row] = await report([ROW, { ...ROW, gateway: "android", messages: 1, parts: 2, delivered: 1, failed_rejected: 0, refused_opt_out: 0 }, { ...ROW, gateway: "api", messages: 0, parts: 0, delivered: 0, failed_rejected: 0, refused_opt_out: 0, replies: 3 }]);
  expect(row).toMatchObject({ messages: 5, parts: 7, delivered: 3, failed: 1, failed_rejected: 1, refused_opt_out: 1, replies: 3 });
  expect(usageCsv(await report([ROW, { ...ROW, gateway: "android", parts: 2 }])).split("\r\n")[1]).toBe("2026-03,loc-1,Acme,8,7,4,2,0,0,2,0,0,2,0,0,5,2,");
});

test.each([
  ['Acme, "Dental"', '"Acme, ""Dental"""'],
  ["=HYPERLINK(1)", "'=HYPERLINK(1)"],
  ["+63 clinic", "'+63 clinic"],
  ["line\nbreak", '"line\nbreak"'],
  ["", ""],
])("a location name %j is written %j", async (name, field) => {
  expect(usageCsv(await report([{ ...ROW, name }])).split("\r\n")[1]).toBe(`2026-03,loc-1,${field},4,5,2,1,0,0,1,0,0,1,0,0,5,0,`);
});

test("the CSV's header is the documented one", () => {
  expect(usageCsv([])).toBe(`${CSV_COLUMNS.join(",")}\r\n`);
  expect(CSV_COLUMNS.join(",")).toBe(
    "month,location_id,location_name,messages,parts,delivered,failed,failed_invalid,failed_not_sent,failed_rejected,failed_undelivered,failed_unknown,refused_opt_out,refused_cap,replies,cast_parts,android_parts,monthly_cap",
  );
});

test("no month: this one; a bad month or location id is a BAD_QUERY", async () => {
  expect((await usageReport({ list: async () => [] }, {}, () => "2026-04", 0)).month).toBe("2026-04");
  await expect(usageReport({ list: async () => [] }, { month: "2026-4" }, () => "", 0)).rejects.toThrow(/month: must be YYYY-MM/);
  await expect(usageReport({ list: async () => [] }, { location: "a b" }, () => "2026-04", 0)).rejects.toThrow(/location: not a location id/);
});
