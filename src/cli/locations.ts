import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, table, type Io } from "./io.ts";
import { syncCommand } from "./sync.ts";

/** `bridge locations list|approve|sync`: the installed locations, keys masked, never a token. */
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
        l.approved ? "yes" : "pending",
        l.expires_at,
        status(l),
      ]);
      io.out(table(["LOCATION", "COMPANY", "SENDER ID", "SMS API KEY", "APPROVED", "TOKEN EXPIRES", "STATUS"], rows));
    });

  locations
    .command("approve <locationId...>")
    .description("let locations use the global SMS_API_KEY and SMS_SENDER_ID (new installs start pending)")
    .option("--json", "machine-readable output")
    .action(async (ids: string[], options: { json?: boolean }) => {
      for (const id of ids) locationArg(id);
      const [{ withStore }, { approveLocation }] = await Promise.all([import("./context.ts"), import("../core/locations.ts")]);
      const approved = withStore(io, globals(), (tokens) => ids.map((id) => approveLocation(tokens, id, Date.now())));
      if (options.json) return io.out(json({ locations: approved }));
      for (const { location_id } of approved) io.out(`approved ${location_id}: it may use the global SMS_API_KEY and SMS_SENDER_ID\n`);
    });

  syncCommand(locations, io, globals);
}

function status(location: { refresh_error: string; uninstalled_at: string | null }): string {
  if (location.uninstalled_at) return "uninstalled";
  return location.refresh_error ? "needs reinstall" : "ok";
}
