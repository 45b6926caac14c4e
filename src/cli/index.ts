import { Command, CommanderError } from "commander";
import { errorMessage } from "../errors.ts";
import { alertsCommand } from "./alerts.ts";
import { androidCommand } from "./android.ts";
import { backupCommand } from "./backup.ts";
import { configCommand } from "./config.ts";
import type { GlobalOptions } from "./context.ts";
import { doctorCommand } from "./doctor.ts";
import { environmentHelp, serveEnvironmentHelp } from "./environment.ts";
import { installUrlCommand } from "./install-url.ts";
import { printable, processIo, UsageError, type Io } from "./io.ts";
import { locationsCommand } from "./locations.ts";
import { messagesCommand } from "./messages.ts";
import { migrateCommand } from "./migrate.ts";
import { optoutsCommand } from "./optouts.ts";
import { rekeyCommand } from "./rekey.ts";
import { statusCommand } from "./status.ts";
import { tokenCommand } from "./token.ts";
import { usageCommand } from "./usage.ts";
import { versionText } from "./version.ts";

/** Adds a command to `program`; `exit` sets the exit code for one that ends without throwing. */
type Register = (program: Command, io: Io, globals: () => GlobalOptions, exit: (code: number) => void) => void;

/** bridge's commands, in the order `bridge --help` lists them. */
const COMMANDS: Record<string, Register> = {
  serve: serveCommandOf,
  locations: locationsCommand,
  messages: messagesCommand,
  optouts: optoutsCommand,
  status: statusCommand,
  usage: usageCommand,
  config: configCommand,
  token: tokenCommand,
  "install-url": installUrlCommand,
  android: androidCommand,
  alerts: alertsCommand,
  // The operator's commands on the database as a whole: upgrades, backups, checks, key rotation.
  migrate: migrateCommand,
  backup: backupCommand,
  doctor: doctorCommand,
  rekey: rekeyCommand,
};

/** Runs the bridge CLI; resolves to the process exit code. */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const program = new Command("bridge")
    .description("Cast.ph SMS provider for HighLevel: the server and its operator tools")
    .version(versionText(), "-v, --version", "print the version, the commit it was built from and its schema")
    .option("--db <path>", "SQLite database file (env DATABASE_PATH, default ./bridge.db)")
    .option("--env-file <path>", "read environment variables from this file (default: ./.env if present)")
    .addHelpText("after", () => environmentHelp())
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  const globals = () => program.opts<GlobalOptions>();

  let exitCode = 0;
  for (const register of commandsFor(argv)) register(program, io, globals, (code) => (exitCode = code));

  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (error) {
    return failure(error, io);
  }
}

/**
 * The commands to build for `argv`. Building all of them (their options, descriptions,
 * subcommands) was a tenth of `locations list`'s start-up (docs/PERFORMANCE.md), so only
 * the one named is built when it is plain which: after nothing but the global options
 * with their values, as commander reads them. Anything else (--help, help, a mistyped
 * command, another option first) gets every command, for the help and the suggestions.
 */
export function commandsFor(argv: readonly string[]): Register[] {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--db" || arg === "--env-file") i++;
    else if (arg.startsWith("--db=") || arg.startsWith("--env-file=")) continue;
    else if (Object.hasOwn(COMMANDS, arg)) return [COMMANDS[arg] as Register];
    else break;
  }
  return Object.values(COMMANDS);
}

/** `serve`: its module (the HTTP stack) is loaded only when it runs. */
function serveCommandOf(program: Command, io: Io, globals: () => GlobalOptions, exit: (code: number) => void): void {
  program
    .command("serve")
    .description("run the HTTP server and the delivery queue (stop with SIGTERM, SIGHUP or Ctrl-C)")
    .addHelpText("after", () => serveEnvironmentHelp())
    .action(async () => {
      const { serveCommand } = await import("./serve.ts"); // only serve needs the HTTP stack
      exit(await serveCommand(io, globals()));
    });
}

function failure(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    // --help and --version end this way too, with exit code 0.
    return error.exitCode === 0 ? 0 : 2;
  }
  if (error instanceof UsageError) {
    io.err(`bridge: ${printable(error.message)}\n(run with --help for usage)\n`);
    return 2;
  }
  io.err(`bridge: ${failureText(error)}\n`);
  return 1;
}

/**
 * One line, control characters escaped: an error may quote HighLevel or Cast. A
 * configuration error (known by its code: see src/sea/heavy.ts on classes) lists its problems one a line.
 */
function failureText(error: unknown): string {
  const lines = errorMessage(error).split("\n");
  if (error instanceof Error && "code" in error && error.code === "CONFIG_INVALID") return lines.map(printable).join("\n");
  return printable(lines.join("\n"));
}
