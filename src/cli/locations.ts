import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, table, type Io } from "./io.ts";

/** `bridge locations list [--json]`: the installed locations, keys masked, never a token. */
export function locationsCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const locations = program.command("locations").description("installed CRM locations");
  locations
    .command("list")
    .description("list installed locations (API keys masked)")
    .option("--json", "machine-readable output, the admin API's field names")
    .action(async (options: { json?: boolean }) => {
      const [{ withStore }, { listLocations }] = await Promise.all([import("./context.ts"), import("../core/locations.ts")]);
      const list = withStore(io, globals(), listLocations);
      if (options.json) return io.out(json({ locations: list }));
      if (list.length === 0) return io.out("no locations installed\n");
      const rows = list.map((l) => [
        l.location_id,
        l.company_id,
        l.sender_id || "(default)",
        l.sms_api_key || "(default)",
        l.expires_at,
        l.refresh_error ? "needs reinstall" : "ok",
      ]);
      io.out(table(["LOCATION", "COMPANY", "SENDER ID", "SMS API KEY", "TOKEN EXPIRES", "STATUS"], rows));
    });
}
