import { availableParallelism } from "node:os";
import pkg from "../../package.json" with { type: "json" };
import { describeConfig } from "../core/config-describe.ts";
import { SCHEMA_VERSION, schemaVersion } from "../db/schema.ts";
import { approvedOffList, cleanStoredNames, offListWarning, unconfirmedApprovals, unconfirmedWarning } from "../core/installs/locations.ts";
import { openCore, type GlobalOptions } from "./context.ts";
import type { Io } from "./io.ts";
import { buildCommit } from "./version.ts";

/** In-flight sends get this long to finish on SIGTERM or SIGHUP (systemd waits 90 s). */
const STOP_GRACE_MS = 30_000;

/** `bridge serve`: HTTP server plus queue worker, until SIGTERM, SIGINT or SIGHUP. */
export async function serveCommand(io: Io, globals: GlobalOptions): Promise<number> {
  // Listened for before anything starts: a signal that came between the start-up line and
  // its handler would otherwise end the process at once, mid-send, by Node's default.
  const stopped = new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
    // Node's default for SIGHUP (a closed terminal, a `kill -HUP` meant as "reload") is to
    // die at once, mid-send. bridge has nothing to reload: it stops as for SIGTERM.
    process.once("SIGHUP", () => resolve("SIGHUP"));
  });
  sizeThreadPool();
  const core = await openCore(io, globals, "serve");
  const { createApp, createRun, listen, PROVIDER_ID_MISSING } = await import("../sea/heavy.ts");
  const { config, log } = core;
  // A SQLite file has one serve (its lock): what a serve killed before left in it is over.
  const run = createRun(core, { alone: core.database.kind === "sqlite" });
  const app = createApp({ core, worker: run.worker });
  const server = await listen(app, config.host, config.port).catch(async (error: unknown) => {
    await core.close();
    throw error;
  });
  await run.start();
  await withoutMaglev();
  // Which binary and which schema: what an operator needs first when an upgrade misbehaves.
  // On PostgreSQL the schema is this bridge's: openCore made or refused it.
  const schema = core.database.kind === "sqlite" ? schemaVersion(core.db) : SCHEMA_VERSION;
  log.info(`bridge ${pkg.version} (commit ${buildCommit()}, database schema ${schema}) listening on ${server.url}`, describeConfig(config));
  const { presence } = run;
  log.info(`this server is ${presence.id} at ${presence.address}${presence.leads() ? ", leading the periodic work (pruning, reconciliation, rescue)" : ""}`);
  if (!config.sms.apiKey) {
    log.warn(
      "SMS_API_KEY is not set: every SMS of a location without its own key fails (no_api_key). Set SMS_API_KEY in the environment or .env and restart, or give each location a key: `bridge config set LOCATION_ID --sms-api-key -`",
    );
  }
  // Never silent: each reply is refused (503, the phone tries again) until it is set.
  if (!config.crm.providerId) log.warn(`${PROVIDER_ID_MISSING}; restart after setting it`);
  if (config.allowedCompanyIds.length === 0) {
    log.info("ALLOWED_COMPANY_IDS is not set: any HighLevel company may install; new locations wait for `bridge locations approve`");
  }
  const cleaned = await cleanStoredNames(core.tokens);
  if (cleaned > 0) log.info(`${cleaned} location name(s) stored with control characters were cleaned of them`);
  const offList = await approvedOffList(core.tokens, config.allowedCompanyIds);
  if (offList.length > 0) log.warn(offListWarning(offList));
  const unconfirmed = await unconfirmedApprovals(core.tokens, config.allowedCompanyIds);
  if (unconfirmed.length > 0) log.warn(unconfirmedWarning(unconfirmed));

  const signal = await stopped;
  const reload = signal === "SIGHUP" ? " (bridge does not reload its configuration: it stops; start it again to apply changes)" : "";
  log.info(`${signal}: no longer accepting requests; finishing messages in flight${reload}`);
  await server.close();
  const left = await run.stop(STOP_GRACE_MS);
  if (left > 0) log.warn(`${left} message(s) still in flight at exit: those caught mid-send are reported failed (delivery unknown) on the next start, the others resume then`);
  await core.close();
  log.info("stopped");
  return 0;
}

/**
 * No Maglev, V8's mid-tier compiler, in the server: under load its compile memory, freed
 * but kept by glibc, set how high peak RSS went, and turning it off cost no intake
 * (docs/PERFORMANCE.md). Not among the executable's execArgv: there it would change V8's
 * flag hash for every command, and V8 would reject the code caches of Node's own modules
 * and compile them from source at each start. For the same reason it is set once the
 * server is up: builtins loaded after it would be compiled from source.
 */
async function withoutMaglev(): Promise<void> {
  // Not import(): dist/bridge's main script has no hook for it (build.mjs, loaderSource).
  process.getBuiltinModule("node:v8").setFlagsFromString("--no-maglev");
}

/**
 * Webhook signatures are verified on libuv's thread pool (CPU-bound). More pool threads
 * than cores only take turns with the event loop. At least 2, so that one slow DNS lookup
 * (also run on the pool) cannot hold up every verification. An operator's own
 * UV_THREADPOOL_SIZE wins; libuv reads it when the pool first starts, which is after this.
 */
function sizeThreadPool(): void {
  process.env.UV_THREADPOOL_SIZE ??= String(Math.max(2, availableParallelism()));
}
