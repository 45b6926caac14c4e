import type { Command } from "commander";
import type { LocationUsage } from "../core/operator/usage.ts";
import { MONTH } from "../db/usage-month.ts";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, printable, table, UsageError, type Io } from "./io.ts";

interface UsageOptions {
  month?: string;
  location?: string;
  json?: boolean;
  csv?: boolean;
}

/**
 * `bridge usage`: each location's use in a month (docs/usage.md), offline on the database like
 * `messages list`: the same report as `GET /api/admin/usage`, and the CSV an agency bills from.
 */
export function usageCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("usage")
    .description("each location's messages, SMS parts, delivered, failed, refused and replies in a month (docs/usage.md)")
    .option("--month <YYYY-MM>", "the month, in USAGE_TIME_ZONE's calendar (default: this month)")
    .option("--location <id>", "only this location")
    .option("--json", "machine-readable output, the admin API's")
    .option("--csv", "one row per location, the columns docs/usage.md lists: for billing")
    .action(async (options: UsageOptions) => {
      if (options.json && options.csv) throw new UsageError("--json and --csv: choose one");
      if (options.month !== undefined && !MONTH.test(options.month)) throw new UsageError("--month: must be YYYY-MM, such as 2026-03");
      if (options.location !== undefined) locationArg(options.location);
      const [{ withStore }, report, { monthIn }] = await Promise.all([import("./context.ts"), import("../core/operator/usage.ts"), import("../db/usage-month.ts")]);
      const query = { month: options.month, location: options.location };
      const found = await withStore(io, globals(), ({ usage }, config) => report.usageReport(usage, query, monthIn(config.usageTimeZone), Date.now()));
      if (options.csv) return io.out(report.usageCsv(found.locations));
      if (options.json) return io.out(json(found));
      print(io, found.month, found.locations);
    });
}

function print(io: Io, month: string, locations: LocationUsage[]): void {
  if (locations.length === 0) return io.out(`no usage in ${month}\n`);
  const rows = locations.map((l) => [
    l.location_id,
    printable(l.location_name) || "-",
    String(l.messages),
    String(l.parts),
    String(l.delivered),
    String(l.failed),
    String(l.refused_opt_out + l.refused_cap),
    String(l.replies),
    l.monthly_cap === null ? "-" : `${l.parts} of ${l.monthly_cap}`,
  ]);
  io.out(`usage in ${month}\n`);
  io.out(table(["LOCATION", "NAME", "MESSAGES", "PARTS", "DELIVERED", "FAILED", "REFUSED", "REPLIES", "CAP"], rows));
}
