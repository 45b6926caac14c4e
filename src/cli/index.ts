import { Command, CommanderError } from "commander";
import { errorMessage } from "../errors.ts";
import { androidCommand } from "./android.ts";
import { configCommand } from "./config.ts";
import type { GlobalOptions } from "./context.ts";
import { environmentHelp, serveEnvironmentHelp } from "./environment.ts";
import { installUrlCommand } from "./install-url.ts";
import { printable, processIo, UsageError, type Io } from "./io.ts";
import { locationsCommand } from "./locations.ts";
import { messagesCommand } from "./messages.ts";
import { opsCommands } from "./ops.ts";
import { optoutsCommand } from "./optouts.ts";
import { statusCommand } from "./status.ts";
import { tokenCommand } from "./token.ts";
import { versionText } from "./version.ts";

/** Runs the bridge CLI; resolves to the process exit code. */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const program = new Command("bridge")
    .description("Cast.ph SMS provider for HighLevel: the server and its operator tools")
    .version(versionText(), "-v, --version", "print the version, the commit it was built from and its schema")
    .option("--db <path>", "SQLite database file (env DATABASE_PATH, default ./bridge.db)")
    .option("--env-file <path>", "read environment variables from this file (default: ./.env if present)")
    .addHelpText("after", environmentHelp())
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  const globals = () => program.opts<GlobalOptions>();

  program
    .command("serve")
    .description("run the HTTP server and the delivery queue (stop with SIGTERM, SIGHUP or Ctrl-C)")
    .addHelpText("after", serveEnvironmentHelp())
    .action(async () => {
      const { serveCommand } = await import("./serve.ts"); // only serve needs the HTTP stack
      exitCode = await serveCommand(io, globals());
    });
  locationsCommand(program, io, globals);
  messagesCommand(program, io, globals);
  optoutsCommand(program, io, globals);
  statusCommand(program, io, globals);
  configCommand(program, io, globals);
  tokenCommand(program, io, globals);
  installUrlCommand(program, io, globals);
  androidCommand(program, io, globals);
  opsCommands(program, io, globals);

  let exitCode = 0;
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (error) {
    return failure(error, io);
  }
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
