import { Command, CommanderError } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { errorMessage } from "../core/errors.ts";
import { configCommand } from "./config.ts";
import type { GlobalOptions } from "./context.ts";
import { installUrlCommand } from "./install-url.ts";
import { processIo, UsageError, type Io } from "./io.ts";
import { locationsCommand } from "./locations.ts";
import { messagesCommand } from "./messages.ts";
import { opsCommands } from "./ops.ts";
import { statusCommand } from "./status.ts";
import { tokenCommand } from "./token.ts";

const ENVIRONMENT_HELP = `
Environment (also read from ./.env or --env-file; the real environment wins):
  BASE_URL              public address of this service (serve, install-url)
  CRM_CLIENT_ID         OAuth client id, "<24 hex>-<suffix>" (serve, install-url, token)
  CRM_CLIENT_SECRET     OAuth client secret (serve, token)
  CRM_API_URL           default https://services.leadconnectorhq.com
  CRM_MARKETPLACE_URL   default https://marketplace.gohighlevel.com
  CRM_WEBHOOK_PUBLIC_KEY  PEM key(s) that sign webhooks; default HighLevel's own
  CRM_PROVIDER_ID       conversation provider id (for inbound messages; not used yet)
  SMS_API_URL           default https://api.cast.ph
  SMS_API_KEY           default gateway API key (a location's own key wins)
  SMS_SENDER_ID         default sender ID (a location's own wins; empty: the gateway's)
  SMS_MAX_PARTS         a message of more parts is refused, default 10
  SMS_HOLD_MAX          longest a message is retried through a gateway outage, default 1h
  DLR_WAIT              longest wait for a delivery receipt, default 30m; 0: do not ask
  CAST_REQUESTS_PER_SECOND  Cast's limit on all requests of this server, default 30
  CAST_MESSAGES_PER_SECOND  Cast's limit on messages per API key, default 10
  ALLOWED_COMPANY_IDS   companies allowed to install and use the defaults above; empty:
                        any may install, its locations wait for \`locations approve\`
  INBOUND_API_KEY       bearer key of /api/admin/* (serve): at least 24 characters
                        (openssl rand -hex 24); two, comma-separated, while rotating;
                        unset disables the admin API
  TRUST_PROXY           1: a reverse proxy appends the client to X-Forwarded-For
  TRUSTED_PROXIES       the peers whose X-Forwarded-For counts (IPs or CIDR ranges),
                        default 127.0.0.1,::1
  DATABASE_PATH         SQLite file, default ./bridge.db (--db)
  HOST, PORT            where serve listens, default 0.0.0.0:3000
  LOG_LEVEL             silent|error|warn|info|debug|trace, default info
  LOG_FORMAT            text|json (one JSON object per line), default text
  RETENTION_DAYS        how long the message log keeps a finished message, default 30
  LOW_BALANCE_CREDITS   warn when a Cast key's balance is below this, default 500; 0: never
  METRICS_TOKEN         bearer of GET /metrics (serve), at least 24 characters;
                        unset: no /metrics
  BRIDGE_ENCRYPTION_KEY 32-byte key (64 hex or base64): encrypt tokens and API keys at rest

Exit codes: 0 success, 1 failure, 2 usage error.`;

/** Runs the bridge CLI; resolves to the process exit code. */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const program = new Command("bridge")
    .description("Cast.ph SMS provider for HighLevel: the server and its operator tools")
    .version(pkg.version, "-v, --version")
    .option("--db <path>", "SQLite database file (env DATABASE_PATH, default ./bridge.db)")
    .option("--env-file <path>", "read environment variables from this file (default: ./.env if present)")
    .addHelpText("after", ENVIRONMENT_HELP)
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  const globals = () => program.opts<GlobalOptions>();

  program
    .command("serve")
    .description("run the HTTP server and the delivery queue (stop with SIGTERM or Ctrl-C)")
    .action(async () => {
      const { serveCommand } = await import("./serve.ts"); // only serve needs the HTTP stack
      exitCode = await serveCommand(io, globals());
    });
  locationsCommand(program, io, globals);
  messagesCommand(program, io, globals);
  statusCommand(program, io, globals);
  configCommand(program, io, globals);
  tokenCommand(program, io, globals);
  installUrlCommand(program, io, globals);
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
    io.err(`bridge: ${error.message}\n(run with --help for usage)\n`);
    return 2;
  }
  io.err(`bridge: ${errorMessage(error)}\n`);
  return 1;
}
