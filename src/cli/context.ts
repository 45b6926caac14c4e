import { existsSync, fstatSync } from "node:fs";
import { loadConfig, type ConfigNeed, type ResolvedConfig } from "../core/config.ts";
import type { Core, Tuning } from "../core/index.ts";
import { openDb, type Db } from "../db/index.ts";
import { lockDb, type LockHolder } from "../db/lock.ts";
import { upgradeDb } from "../db/upgrade.ts";
import type { Store } from "../store/contract.ts";
import { readEnvFile } from "./env-file.ts";
import { UsageError, type Io } from "./io.ts";

export interface GlobalOptions {
  db?: string;
  envFile?: string;
}

/**
 * The environment a command runs with: a .env file (`--env-file`, else ./.env if
 * present and the user's own) under the real environment, which wins; `--db` over
 * DATABASE_PATH.
 */
export function commandEnv(io: Io, options: GlobalOptions): Record<string, string | undefined> {
  let fromFile: Record<string, string | undefined> = {};
  const warn = (message: string) => io.err(`bridge: warning: ${message}\n`);
  if (options.envFile !== undefined) {
    if (!existsSync(options.envFile)) throw new UsageError(`env file not found: ${options.envFile}`);
    fromFile = readEnvFile(options.envFile, { mustBeOurs: false, warn });
  } else if (existsSync(".env")) {
    fromFile = readEnvFile("./.env", { mustBeOurs: true, warn });
  }
  const env = { ...fromFile, ...io.env };
  if (options.db) env.DATABASE_PATH = options.db;
  return env;
}

export function commandConfig(io: Io, options: GlobalOptions, need: ConfigNeed): ResolvedConfig {
  return loadConfig(commandEnv(io, options), need, (message) => io.err(`bridge: warning: ${message}\n`));
}

/** Config, database and core for one command; `close` when done (it ends PostgreSQL's pool). */
export async function openCore(io: Io, options: GlobalOptions, need: ConfigNeed, tuning?: Tuning): Promise<Core & { close(): Promise<void> }> {
  const config = commandConfig(io, options, need);
  // Loaded here, not at start-up: commands that only read the store never need the HTTP clients.
  const { createCore, createLogger, writesToJournal } = await import("../sea/heavy.ts");
  const log = createLogger(config.logLevel, process.stderr, {
    format: config.logFormat,
    journal: writesToJournal(io.env.JOURNAL_STREAM, stderrId()),
  });
  if (config.databaseUrl) {
    // serve makes or upgrades the schema under its lock, as it does a SQLite file; the key is checked first.
    // serve's claims name it (run_by), so that the others rescue its sends only once it stops beating.
    const serverId = need === "serve" ? (await import("../core/servers.ts")).newServerId() : undefined;
    const database = await openPostgresStore(config, { create: need === "serve", keyCheck: true, log, serverId });
    const close = () => database.pool.end();
    return { ...(await closingOnError(() => createCore(config, database, log, Date.now, tuning), close)), close };
  }
  const db = openExisting(config, need, (message) => log.warn(message));
  let lock: { release(): void } | undefined;
  const close = async () => {
    db.close();
    lock?.release();
  };
  return closingOnError(async () => {
    // Held until serve stops: no rekey or migrate while it runs, and no second serve.
    if (need === "serve") lock = lockDb(config.databasePath, "serve");
    // Only serve (and `bridge migrate`) change the schema, after a backup.
    if (need === "serve") await upgradeDb(db, config.databasePath, (message) => log.info(message));
    return { ...createCore(config, db, log, Date.now, tuning), close };
  }, close);
}

/** Runs `fn` with an open core and always closes the database after. */
export async function withCore<T>(io: Io, options: GlobalOptions, need: ConfigNeed, fn: (core: Core) => T | Promise<T>, tuning?: Tuning): Promise<T> {
  const core = await openCore(io, options, need, tuning);
  try {
    return await fn(core);
  } finally {
    await core.close();
  }
}

/**
 * Runs `fn` with the store at this bridge's schema, SQLite's or PostgreSQL's, closed after.
 * `secrets`: the key is checked against the sealed values (refused when it opens none;
 * the values it cannot open are refused where they are used, naming their place); false
 * for what opens no secret (the message log, the opt-out lists).
 */
export async function withStore<T>(
  io: Io,
  options: GlobalOptions,
  fn: (store: Store, config: ResolvedConfig) => T | Promise<T>,
  { secrets = true }: { secrets?: boolean } = {},
): Promise<T> {
  const config = commandConfig(io, options, "store");
  if (config.databaseUrl) {
    const { pool, store } = await openPostgresStore(config, { create: false, keyCheck: secrets });
    try {
      return await fn(store, config);
    } finally {
      await pool.end();
    }
  }
  const [{ openStore }, { openSqliteStore }, { createSealer }, { monthIn }] = await Promise.all([
    import("../store/open.ts"),
    import("../store/sqlite.ts"),
    import("../db/sealer.ts"),
    import("../db/usage-month.ts"),
  ]);
  const db = openExisting(config, "store", (message) => io.err(`bridge: ${message}\n`));
  try {
    const monthOf = monthIn(config.usageTimeZone);
    const store = secrets ? openStore(config, db) : openSqliteStore(db, createSealer(config.encryptionKey), { monthOf });
    return await fn(store, config);
  } finally {
    db.close();
  }
}

/**
 * Runs `fn` with the database itself, for commands that work on the file (backup,
 * migrate, rekey); `keepOlderSchema` lets them open one an older bridge made. `lock`:
 * the command rewrites the file, so it refuses while serve (or another such command) runs.
 * `postgres`: what the command does instead when DATABASE_URL is set.
 */
export async function withFile<T>(
  io: Io,
  options: GlobalOptions,
  open: { keepOlderSchema?: boolean; lock?: LockHolder; postgres: (config: ResolvedConfig) => Promise<T> },
  fn: (db: Db, config: ResolvedConfig) => T | Promise<T>,
): Promise<T> {
  const config = commandConfig(io, options, "store");
  if (config.databaseUrl) return open.postgres(config);
  const db = openExisting(config, "store", (message) => io.err(`bridge: ${message}\n`), open.keepOlderSchema);
  let lock: { release(): void } | undefined;
  try {
    if (open.lock) lock = lockDb(config.databasePath, open.lock);
    return await fn(db, config);
  } finally {
    db.close();
    lock?.release();
  }
}

/** The store on DATABASE_URL (src/store/postgres/configured.ts), loaded only when it is set: SQLite's commands never load pg. */
async function openPostgresStore(config: ResolvedConfig, opening: import("../store/postgres/configured.ts").PostgresOpening) {
  return (await import("../store/postgres/configured.ts")).openConfiguredPostgres(config, opening);
}

/** `build()`'s result; `close` run first when it throws. */
async function closingOnError<T>(build: () => T | Promise<T>, close: () => Promise<void>): Promise<T> {
  try {
    return await build();
  } catch (error) {
    await close();
    throw error;
  }
}

/** Device and inode of this process's stderr; undefined when it is closed. */
function stderrId(): { dev: number; ino: number } | undefined {
  try {
    return fstatSync(2);
  } catch {
    return undefined;
  }
}

function openExisting(config: ResolvedConfig, need: ConfigNeed, warn: (message: string) => void, keepOlderSchema = need === "serve"): Db {
  // Only the server creates the database; a typo in --db should not make a new, empty one.
  if (need !== "serve" && !existsSync(config.databasePath)) {
    throw new Error(`database not found: ${config.databasePath} (set DATABASE_PATH or --db)`);
  }
  return openDb(config.databasePath, { existing: need !== "serve", warn, keepOlderSchema });
}
