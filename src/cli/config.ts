import type { Command } from "commander";
import type { LocationConfig } from "../core/installs/locations.ts";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, printable, UsageError, type Io } from "./io.ts";

/** `bridge config get|set <locationId>`: the same code path as the admin API's config endpoints. */
export function configCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const config = program.command("config").description("a location's sender ID, SMS API key and gateway");

  config
    .command("get <locationId>")
    .description("show a location's configuration (API key masked)")
    .option("--json", "machine-readable output")
    .action(async (locationId: string, options: { json?: boolean }) => {
      const [{ withStore }, { getLocationConfig, withCap }] = await Promise.all([import("./context.ts"), import("../core/installs/locations.ts")]);
      const found = await withStore(io, globals(), async ({ tokens, phones, usage }) => withCap(await getLocationConfig(tokens, locationArg(locationId), phones), usage));
      print(io, found, options.json);
    });

  config
    .command("set <locationId>")
    .description('set a location\'s sender ID, SMS API key ("" clears one back to the global default) or gateway (a phone: docs/android.md)')
    .option(
      "--sender-id <value>",
      "sender ID for this location's messages (default: SMS_SENDER_ID); on Cast, checked against the approved ones of the key it sends with",
    )
    .option(
      "--sms-api-key <value>",
      'Cast.ph API key for this location (default: SMS_API_KEY); "-" (recommended) reads it from standard input, ' +
        "one line, not echoed on a terminal: a key on the command line is visible to every user in the process list",
    )
    .option("--gateway <gateway>", 'which gateway sends: "cast" (default) or "android" (a phone running SMS Gateway for Android, docs/android.md)')
    .option("--android-url <url>", "the phone's API: http://<phone-ip>:8080 (local) or https://api.sms-gate.app/3rdparty/v1 (cloud)")
    .option("--android-user <user>", "the app's username")
    .option("--android-password <value>", '"-" (recommended) reads it from standard input')
    .option("--android-device <id>", "the phone's device id (the app's Settings; cloud: GET /devices)")
    .option("--android-signing-key <value>", 'the app\'s webhook signing key; "-" (recommended) reads it from standard input')
    .option("--monthly-cap <parts>", 'at most this many SMS parts a month (USAGE_TIME_ZONE\'s); "none" removes the cap (docs/usage.md)')
    .option("--json", "machine-readable output")
    .action(async (locationId: string, options: SetOptions) => {
      locationArg(locationId);
      const change = await changeOf(io, options);
      if (Object.values(change).every((v) => v === undefined)) {
        throw new UsageError("config set needs --sender-id, --sms-api-key, --monthly-cap and/or the gateway's options (--gateway, --android-…)");
      }
      const [{ withStore }, heavy] = await Promise.all([import("./context.ts"), import("../sea/heavy.ts")]);
      const changed = await withStore(io, globals(), ({ tokens, phones, usage }, config) => {
        // A sender ID is checked at Cast against the key the location sends with; offline, it is saved with a warning.
        const cast = heavy.createCastClient({ apiUrl: config.sms.apiUrl, timeoutMs: CHECK_TIMEOUT_MS, retries: 0 });
        const check = heavy.senderIdCheck(config, (key) => cast.senderIds(key));
        return heavy.setLocationConfig(tokens, locationId, change, Date.now(), phones, check, usage);
      });
      if (changed.warning) io.err(`bridge: warning: ${printable(changed.warning)}\n`);
      print(io, changed, options.json);
    });
}

/** How long `config set` waits for Cast's list of approved sender IDs before saving unchecked. */
const CHECK_TIMEOUT_MS = 10_000;

interface SetOptions {
  senderId?: string;
  smsApiKey?: string;
  gateway?: string;
  androidUrl?: string;
  androidUser?: string;
  androidPassword?: string;
  androidDevice?: string;
  androidSigningKey?: string;
  monthlyCap?: string;
  json?: boolean;
}

/** The change as the admin API takes it; a secret given as "-" read from standard input. */
async function changeOf(io: Io, options: SetOptions): Promise<Record<string, string | number | null | undefined>> {
  const fromStdin = (["smsApiKey", "androidPassword", "androidSigningKey"] as const).filter((k) => options[k] === "-");
  // Standard input is read in one go: a second "-" would find the first one's read took its line too.
  if (fromStdin.length > 1) throw new UsageError("only one secret can be read from standard input per command: run config set once for each");
  const smsApiKey = options.smsApiKey === "-" ? await keyFromStdin(io) : options.smsApiKey;
  const read = (value: string | undefined, flag: string, what: string) => (value === "-" ? secretFromStdin(io, flag, what) : value);
  return {
    sender_id: options.senderId,
    sms_api_key: smsApiKey,
    gateway: options.gateway,
    android_url: options.androidUrl,
    android_user: options.androidUser,
    android_password: await read(options.androidPassword, "--android-password", "the phone's password"),
    android_device: options.androidDevice,
    android_signing_key: await read(options.androidSigningKey, "--android-signing-key", "the phone's webhook signing key"),
    monthly_cap: capOf(options.monthlyCap),
  };
}

/** `--monthly-cap`: a whole number of SMS parts, or "none" (null: the cap removed). */
function capOf(value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === "none") return null;
  if (!/^\d{1,10}$/.test(value)) throw new UsageError('--monthly-cap: a whole number of SMS parts, or "none" to remove the cap');
  return Number(value);
}

/** A phone's secret from standard input: an empty line is refused (an unset variable piped in). */
async function secretFromStdin(io: Io, flag: string, what: string): Promise<string> {
  if (!io.readLine) throw new UsageError(`${flag} -: there is no standard input to read ${what} from`);
  const secret = await io.readLine(`${what} (not shown): `);
  if (secret === "") throw new UsageError(`${flag} -: nothing on standard input`);
  return secret;
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

function print(io: Io, config: LocationConfig & { monthly_cap?: number | null }, asJson: boolean | undefined): void {
  if (asJson) return io.out(json(config));
  io.out(`location_id  ${config.location_id}\nsender_id    ${printable(config.sender_id) || "(global default)"}\n`);
  io.out(`sms_api_key  ${config.sms_api_key || "(global default)"}\n`);
  if (config.monthly_cap !== undefined) io.out(`monthly_cap  ${config.monthly_cap === null ? "(none)" : `${config.monthly_cap} SMS parts`}\n`);
  if (config.gateway) io.out(`gateway      ${config.gateway}\n`);
  if (config.gateway !== "android") return;
  io.out(`android_url  ${printable(config.android_url ?? "")}\nandroid_user ${printable(config.android_user ?? "")}\n`);
  io.out(`android_password ${config.android_password || "(not set)"}\nandroid_device ${config.android_device}\n`);
  io.out(`android_signing_key ${config.android_signing_key || "(not set)"}\n`);
}
