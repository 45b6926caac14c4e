import { expect, test } from "vitest";
import { isTimeZone, monthIn } from "../../src/db/usage-month.ts";

test.each([
  ["Asia/Manila", "2026-03-31T15:59:59.999Z", "2026-03"],
  ["Asia/Manila", "2026-03-31T16:00:00.000Z", "2026-04"],
  ["Asia/Manila", "2026-12-31T16:00:00.000Z", "2027-01"],
  ["Asia/Manila", "2026-01-01T00:00:00.000Z", "2026-01"],
  ["UTC", "2026-03-31T23:59:59.999Z", "2026-03"],
  // New York in summer time (UTC-4) on either side of its month's end.
  ["America/New_York", "2026-08-01T03:59:59.999Z", "2026-07"],
  ["America/New_York", "2026-08-01T04:00:00.000Z", "2026-08"],
  // …and in winter time (UTC-5).
  ["America/New_York", "2026-12-01T04:59:59.999Z", "2026-11"],
  ["America/New_York", "2026-12-01T05:00:00.000Z", "2026-12"],
])("the month in %s at %s is %s", (zone, at, month) => {
  expect(monthIn(zone)(Date.parse(at))).toBe(month);
});

test.each([
  ["Asia/Manila", true],
  ["UTC", true],
  ["Europe/Berlin", true],
  ["Mars/Olympus", false],
  ["", false],
])("%s is a time zone: %s", (zone, known) => {
  expect(isTimeZone(zone)).toBe(known);
});
