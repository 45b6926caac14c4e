const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A time (ms since the epoch) as JSON and the CLI show it: ISO 8601, UTC. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A duration such as `90s`, `30m`, `1h` or `2d`, in ms; undefined when it is not one. */
export function durationMs(value: string): number | undefined {
  const match = /^(\d+)\s*([smhd])$/.exec(value.trim());
  return match ? Number(match[1]) * (UNIT_MS[match[2] ?? "s"] ?? 1000) : undefined;
}

/**
 * A point in time from the command line or a query: an ISO 8601 time, or a duration
 * back from `now` (`15m`, `2h`, `7d`). Undefined when it is neither.
 */
export function pointInTime(value: string, now: number): number | undefined {
  const back = durationMs(value);
  if (back !== undefined) return now - back;
  // Dates only with a time zone or as a plain date (UTC): a local time would depend on the host.
  if (!/^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))?$/.test(value.trim())) return undefined;
  const at = Date.parse(value.trim());
  return Number.isFinite(at) ? at : undefined;
}
