import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, table, UsageError, type Io } from "./io.ts";
import { syncCommand } from "./sync.ts";

/** `bridge locations list|approve|unapprove|sync|remove`: the installed locations, keys masked, never a token. */
export function locationsCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const locations = program.command("locations").description("installed CRM locations");
  locations
    .command("list")
    .description("list installed locations (API keys masked)")
    .option("--json", "machine-readable output, the admin API's field names")
    .action(async (options: { json?: boolean }) => {
      const [{ withStore }, { listLocations }] = await Promise.all([import("./context.ts"), import("../core/installs/locations.ts")]);
      const list = await withStore(io, globals(), ({ tokens, phones }, config) => listLocations(tokens, config.allowedCompanyIds, phones));
      if (options.json) return io.out(json({ locations: list }));
      if (list.length === 0) return io.out("no locations installed\n");
      const rows = list.map((l) => [
        l.location_id,
        l.name || "-",
        l.company_id,
        l.sender_id || "(default)",
        l.gateway === "android" ? `phone ${l.android_device}` : l.sms_api_key || "(default)",
        l.off_list ? "off list" : l.unconfirmed ? "unconfirmed" : l.approved ? "yes" : "pending",
        l.expires_at,
        status(l),
      ]);
      io.out(table(["LOCATION", "NAME", "COMPANY", "SENDER ID", "SMS API KEY", "APPROVED", "TOKEN EXPIRES", "STATUS"], rows));
    });

  locations
    .command("approve <locationId...>")
    .description("let locations use the global SMS_API_KEY and SMS_SENDER_ID (new installs start pending; with ALLOWED_COMPANY_IDS set, it counts only for its companies)")
    .option("--json", "machine-readable output")
    .action(approval(io, globals, true, "approved", "it may use the global SMS_API_KEY and SMS_SENDER_ID"));

  locations
    .command("unapprove <locationId...>")
    .description("withdraw locations' approval: they send only with a key of their own (until approved again; a reinstall does not)")
    .option("--json", "machine-readable output")
    .action(approval(io, globals, false, "unapproved", "pending: it may no longer use the global SMS_API_KEY or SMS_SENDER_ID"));

  syncCommand(locations, io, globals);

  locations
    .command("remove <locationId>")
    .description("remove a location's record: its token and settings (its messages stay in the log)")
    .option("--yes", "really remove it")
    .action(async (id: string, options: { yes?: boolean }) => {
      locationArg(id);
      if (!options.yes) {
        throw new UsageError(`this would remove location ${id}: its token, sender ID, API key and approval (its messages stay in the log); run again with --yes`);
      }
      const [{ withStore }, { removeLocation }] = await Promise.all([import("./context.ts"), import("../core/installs/locations.ts")]);
      await withStore(io, globals(), ({ tokens }) => removeLocation(tokens, id));
      io.out(`removed ${id}; if the app is still installed there in HighLevel, the next sync or INSTALL brings it back (uninstall it in HighLevel first)\n`);
    });
}

/** The action of `approve` (true) and `unapprove` (false): one path, as the admin API's. */
function approval(io: Io, globals: () => GlobalOptions, approved: boolean, done: string, meaning: string) {
  return async (ids: string[], options: { json?: boolean }): Promise<void> => {
    for (const id of ids) locationArg(id);
    const [{ withStore }, { setApproval, sharedRefusal }] = await Promise.all([import("./context.ts"), import("../core/installs/locations.ts")]);
    const changed = await withStore(io, globals(), ({ tokens }, config) =>
      eachInTurn(ids, async (id) => {
        const change = await setApproval(tokens, id, approved, Date.now(), config.allowedCompanyIds);
        const record = await tokens.get(id);
        // An approval the list overrides must not read as done.
        const refusal = approved && record ? sharedRefusal(record, config.allowedCompanyIds) : undefined;
        return { change, line: `${done} ${id}: ${refusal ? `but it stays pending: it ${refusal}` : meaning}\n` };
      }),
    );
    if (options.json) return io.out(json({ locations: changed.map((c) => c.change) }));
    for (const { line } of changed) io.out(line);
  };
}

/** `fn` of each of `items`, one after the other: the writes in the order named. */
async function eachInTurn<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const item of items) results.push(await fn(item));
  return results;
}

function status(location: { refresh_error: string; uninstalled_at: string | null }): string {
  if (location.uninstalled_at) return "uninstalled";
  return location.refresh_error ? "needs reinstall" : "ok";
}
