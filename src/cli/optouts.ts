import type { Command } from "commander";
import type { OptOutDeps, OptOutView } from "../core/operator/optouts.ts";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, table, UsageError, type Io } from "./io.ts";

/** How a number comes off the list: HighLevel does not tell bridge when a contact's DND is lifted there. */
const LIFTED =
  "A DND lifted in HighLevel does not take a number off this list; `bridge optouts remove LOCATION_ID PHONE` does, " +
  "or a reply START (or UNSTOP) from the number.";

/** `bridge optouts list|add|remove`: a location's opt-out list, the admin API's code path (docs/cli.md, "Opt-outs"). */
export function optoutsCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const optouts = program
    .command("optouts")
    .description("a location's opt-out list: numbers its messages are not sent to")
    .addHelpText(
      "after",
      "\nA reply STOP (STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, HINTO) adds its sender; START or UNSTOP removes it." +
        "\nNumbers on Cast's own unsubscribed list are not sent to either; they are lifted in Cast, not here." +
        `\n${LIFTED}`,
    );

  optouts
    .command("list <locationId>")
    .description("the numbers on the list, newest first, masked")
    .option("--json", 'machine-readable: {"location_id":…,"opt_outs":[…]} as the admin API answers')
    .action(async (locationId: string, options: { json?: boolean }) => {
      const view = await withOptOuts(io, globals(), (deps, lib) => lib.listOptOuts(deps, locationArg(locationId)));
      if (options.json) return io.out(json(view));
      if (view.opt_outs.length === 0) return io.out(`no opt-outs for location ${locationId}\n`);
      io.out(table(["PHONE", "BY", "SINCE"], view.opt_outs.map(row)));
      io.out(`\n${LIFTED.replace("LOCATION_ID", locationId)}\n`);
    });

  optouts
    .command("add <locationId> <phone>")
    .description("put a number on the list: the location's messages to it fail with 'recipient opted out'")
    .option("--json", "machine-readable output")
    .action(async (locationId: string, phone: string, options: { json?: boolean }) => {
      locationArg(locationId);
      const done = await withOptOuts(io, globals(), (deps, lib) => lib.addOptOut(deps, locationId, phoneArg(lib, phone), Date.now()));
      if (options.json) return io.out(json(done));
      io.out(`${done.phone} ${done.added ? "added to" : "was already on"} the opt-out list of location ${locationId}\n`);
    });

  optouts
    .command("remove <locationId> <phone>")
    .description("take a number off the list (whoever put it there): the location's messages reach it again")
    .option("--json", "machine-readable output")
    .action(async (locationId: string, phone: string, options: { json?: boolean }) => {
      locationArg(locationId);
      const done = await withOptOuts(io, globals(), (deps, lib) => lib.removeOptOut(deps, locationId, phoneArg(lib, phone)));
      if (options.json) return io.out(json(done));
      io.out(`${done.phone} ${done.removed ? "removed from" : "was not on"} the opt-out list of location ${locationId}\n`);
    });
}

/** What the command uses of core/operator/optouts.ts, from heavy.ts: it reads numbers with libphonenumber. */
type Lib = Pick<typeof import("../sea/heavy.ts"), "addOptOut" | "listOptOuts" | "optOutPhone" | "removeOptOut">;

async function withOptOuts<T>(io: Io, globals: GlobalOptions, fn: (deps: OptOutDeps, lib: Lib) => T | Promise<T>): Promise<T> {
  const [{ withStore }, lib] = await Promise.all([import("./context.ts"), import("../sea/heavy.ts")]);
  // The token store only says whether the location is known: no secret is opened.
  return withStore(io, globals, ({ optOuts, tokens }) => fn({ optOuts, tokens }, lib), { secrets: false });
}

/** A phone from the command line, as the admin API checks it: a bad one is a usage error (exit 2). */
function phoneArg(lib: Lib, phone: string): string {
  try {
    return lib.optOutPhone(phone);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function row(o: OptOutView): string[] {
  return [o.phone, o.by, o.opted_out_at.slice(0, 19).replace("T", " ")];
}
