import { isId } from "../ids.ts";
import { AppError } from "../../errors.ts";
import { OUTCOME_COLUMNS, type OutcomeColumn } from "../../db/usage-count.ts";
import { MONTH, type MonthOf } from "../../db/usage-month.ts";
import type { UsageStore } from "../../store/contract.ts";
import type { UsageRow } from "../../store/types.ts";

/** One location's usage in one month, all gateways together, as the CLI, the admin API and the CSV give it (docs/usage.md). */
export type LocationUsage = {
  month: string;
  location_id: string;
  location_name: string;
  messages: number;
  parts: number;
  /** Every failed class together; the refusals apart. */
  failed: number;
  replies: number;
  /** The location's monthly cap of SMS parts now; null: none. */
  monthly_cap: number | null;
  /** The same by gateway: 'cast', 'android', 'api' (replies through POST /api/inbound). */
  gateways: Record<string, GatewayUsage>;
} & Record<OutcomeColumn, number>;

export type GatewayUsage = { messages: number; parts: number; failed: number; replies: number } & Record<OutcomeColumn, number>;

/** What `bridge usage` and `GET /api/admin/usage` take: `month` (YYYY-MM, default this month), `location`. */
export interface UsageQuery {
  month?: string;
  location?: string;
}

/** The CSV an agency's billing imports: one row per location and month (docs/usage.md, "The CSV"). */
export const CSV_COLUMNS = [
  "month",
  "location_id",
  "location_name",
  "messages",
  "parts",
  "delivered",
  "failed",
  ...OUTCOME_COLUMNS.filter((c) => c !== "delivered"),
  "replies",
  "cast_parts",
  "android_parts",
  "monthly_cap",
] as const;

/** The usage a query asks for, by location; bad input is a BAD_QUERY (400, or a usage error). */
export async function usageReport(usage: Pick<UsageStore, "list">, query: UsageQuery, monthOf: MonthOf, now: number): Promise<{ month: string; locations: LocationUsage[] }> {
  const month = query.month ?? monthOf(now);
  if (!MONTH.test(month)) throw new AppError("BAD_QUERY", "month: must be YYYY-MM, such as 2026-03");
  if (query.location !== undefined && !isId(query.location)) throw new AppError("BAD_QUERY", "location: not a location id");
  const rows = await usage.list({ locationId: query.location, from: month, to: month });
  return { month, locations: byLocation(rows) };
}

/** The report as CSV (RFC 4180: a header line, CRLF, fields quoted when they need it). */
export function usageCsv(locations: LocationUsage[]): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (const l of locations) {
    const values: Record<(typeof CSV_COLUMNS)[number], string | number> = {
      ...l,
      cast_parts: l.gateways.cast?.parts ?? 0,
      android_parts: l.gateways.android?.parts ?? 0,
      monthly_cap: l.monthly_cap ?? "",
    };
    lines.push(CSV_COLUMNS.map((c) => csvField(values[c])).join(","));
  }
  return `${lines.join("\r\n")}\r\n`;
}

function byLocation(rows: UsageRow[]): LocationUsage[] {
  const found = new Map<string, LocationUsage>();
  for (const row of rows) {
    const key = `${row.month} ${row.locationId}`;
    const location = found.get(key) ?? emptyUsage(row);
    const gateway = counts(row);
    location.gateways[row.gateway] = gateway;
    for (const c of ["messages", "parts", "failed", "replies", ...OUTCOME_COLUMNS] as const) location[c] += gateway[c];
    found.set(key, location);
  }
  return [...found.values()];
}

function counts(row: UsageRow): GatewayUsage {
  const outcomes = Object.fromEntries(OUTCOME_COLUMNS.map((c) => [c, row[c]])) as Record<OutcomeColumn, number>;
  const failed = OUTCOME_COLUMNS.filter((c) => c.startsWith("failed_")).reduce((n, c) => n + row[c], 0);
  return { messages: row.messages, parts: row.parts, failed, replies: row.replies, ...outcomes };
}

function emptyUsage(row: UsageRow): LocationUsage {
  const zero = Object.fromEntries(OUTCOME_COLUMNS.map((c) => [c, 0])) as Record<OutcomeColumn, number>;
  const head = { month: row.month, location_id: row.locationId, location_name: row.name };
  return { ...head, messages: 0, parts: 0, failed: 0, replies: 0, monthly_cap: row.cap, gateways: {}, ...zero };
}

/** A CSV field: quoted when it holds a comma, a quote or a line break; a leading =, +, - or @ defused for spreadsheets. */
function csvField(value: string | number): string {
  if (typeof value === "number") return String(value);
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
