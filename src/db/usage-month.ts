/**
 * The month a message counts in (docs/usage.md): `YYYY-MM` in the operator's time zone
 * (USAGE_TIME_ZONE, an IANA zone; Asia/Manila by default), read with the runtime's own
 * time-zone data, so a zone with summer time is right on either side of its change.
 */
export type MonthOf = (now: number) => string;

/** The usage month by default: the Philippines, where Cast bills. */
export const DEFAULT_USAGE_ZONE = "Asia/Manila";

/** A `YYYY-MM` month. */
export const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** The month of a time in `zone`; throws a RangeError for a zone the runtime does not know. */
export function monthIn(zone: string): MonthOf {
  const format = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit" });
  return (now) => {
    const parts = format.formatToParts(now);
    const year = parts.find((p) => p.type === "year")?.value ?? "";
    const month = parts.find((p) => p.type === "month")?.value ?? "";
    return `${year.padStart(4, "0")}-${month}`;
  };
}

/** Whether the runtime knows `zone` as an IANA time zone. */
export function isTimeZone(zone: string): boolean {
  try {
    monthIn(zone);
    return zone !== "";
  } catch {
    return false;
  }
}

