import type { Command } from "commander";
import type { CompanySync, SyncProgress } from "../core/installs/sync.ts";
import type { GlobalOptions } from "./context.ts";
import { json, table, type Io } from "./io.ts";

/**
 * `bridge locations sync [--json]`: the server's hourly reconciliation, now. Progress
 * goes to stderr, and only on a terminal: a script or a log file gets the result alone.
 */
export function syncCommand(locations: Command, io: Io, globals: () => GlobalOptions): void {
  locations
    .command("sync")
    .description("compare each agency's installed locations in HighLevel with bridge's: add new ones, mark removed ones")
    .option("--json", "machine-readable output")
    .action(async (options: { json?: boolean }) => {
      const { withCore } = await import("./context.ts");
      const progress = io.errIsTerminal?.() ? (at: SyncProgress) => io.err(`\r${at.companyId}: location ${at.done + 1} of ${at.total}…`) : undefined;
      const results = await withCore(io, globals(), "token", (core) => core.installs.sync({ progress }));
      if (progress) io.err("\r\x1b[K");
      if (options.json) io.out(json({ companies: results }));
      else io.out(describe(results));
      const failures = results.filter((r) => r.error).length + results.reduce((n, r) => n + r.failed.length, 0);
      if (failures > 0) throw new Error(`sync incomplete: ${failures} failure(s)`);
    });
}

function describe(results: CompanySync[]): string {
  if (results.length === 0) {
    return "no agency tokens stored: install the app from the agency (agency level) to let bridge follow its locations\n";
  }
  const rows = results.map((r) => [
    r.company_id,
    r.error ? "-" : String(r.installed),
    r.added.join(", ") || "-",
    r.marked_uninstalled.join(", ") || "-",
    r.error ?? (r.failed.map((f) => `${f.location_id}: ${f.error}`).join("; ") || "-"),
  ]);
  return table(["COMPANY", "INSTALLED", "ADDED", "MARKED UNINSTALLED", "FAILED"], rows);
}
