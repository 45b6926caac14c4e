import type { Command } from "commander";
import type { LocationConfig } from "../core/installs/locations.ts";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, printable, UsageError, type Io } from "./io.ts";

/** `bridge config get|set <locationId>`: the same code path as the admin API's config endpoints. */
export function configCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const config = program.command("config").description("a location's sender ID and SMS API key");

  config
    .command("get <locationId>")
    .description("show a location's configuration (API key masked)")
    .option("--json", "machine-readable output")
    .action(async (locationId: string, options: { json?: boolean }) => {
      const [{ withStore }, { getLocationConfig }] = await Promise.all([import("./context.ts"), import("../core/installs/locations.ts")]);
      print(io, withStore(io, globals(), (tokens) => getLocationConfig(tokens, locationArg(locationId))), options.json);
    });

  config
    .command("set <locationId>")
    .description('set a location\'s sender ID and/or SMS API key ("" clears one back to the global default)')
    .option("--sender-id <value>", "sender ID for this location's messages (default: SMS_SENDER_ID)")
    .option(
      "--sms-api-key <value>",
      'Cast.ph API key for this location (default: SMS_API_KEY); "-" (recommended) reads it from standard input, ' +
        "one line, not echoed on a terminal: a key on the command line is visible to every user in the process list",
    )
    .option("--json", "machine-readable output")
    .action(async (locationId: string, options: { senderId?: string; smsApiKey?: string; json?: boolean }) => {
      locationArg(locationId);
      if (options.senderId === undefined && options.smsApiKey === undefined) {
        throw new UsageError("config set needs --sender-id and/or --sms-api-key");
      }
      const smsApiKey = options.smsApiKey === "-" ? await keyFromStdin(io) : options.smsApiKey;
      const [{ withStore }, { setLocationConfig }] = await Promise.all([import("./context.ts"), import("../sea/heavy.ts")]);
      const change = { sender_id: options.senderId, sms_api_key: smsApiKey };
      print(io, withStore(io, globals(), (tokens) => setLocationConfig(tokens, locationId, change, Date.now())), options.json);
    });
}

/**
 * `--sms-api-key -`. An empty line is refused rather than taken as "clear the key": it is
 * more often an unset variable piped in, and clearing sends the location's messages with
 * the shared key. Clearing stays explicit: `--sms-api-key ""`.
 */
async function keyFromStdin(io: Io): Promise<string> {
  if (!io.readLine) throw new UsageError("--sms-api-key -: there is no standard input to read the key from");
  const key = await io.readLine("SMS API key (not shown): ");
  if (key === "") throw new UsageError('--sms-api-key -: no key on standard input (to clear the key, use --sms-api-key "")');
  return key;
}

function print(io: Io, config: LocationConfig, asJson: boolean | undefined): void {
  if (asJson) return io.out(json(config));
  io.out(`location_id  ${config.location_id}\nsender_id    ${printable(config.sender_id) || "(global default)"}\n`);
  io.out(`sms_api_key  ${config.sms_api_key || "(global default)"}\n`);
}
