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

/**
 * The month of a time in `zone` (a zone the runtime does not know: a RangeError at the first
 * call; `isTimeZone` checks it first). The formatter is made at the first call: loading the
 * runtime's time-zone data costs a command that never counts usage about 25 ms of start-up.
 */
export function monthIn(zone: string): MonthOf {
  let format: Intl.DateTimeFormat | undefined;
  return (now) => {
    format ??= formatter(zone);
    const parts = format.formatToParts(now);
    const year = parts.find((p) => p.type === "year")?.value ?? "";
    const month = parts.find((p) => p.type === "month")?.value ?? "";
    return `${year.padStart(4, "0")}-${month}`;
  };
}

function formatter(zone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit" });
}

/** Whether the runtime knows `zone` as an IANA time zone (the default is known without asking it, which costs start-up). */
export function isTimeZone(zone: string): boolean {
  if (zone === DEFAULT_USAGE_ZONE) return true;
  try {
    formatter(zone);
    return zone !== "";
  } catch {
    return false;
  }
}

