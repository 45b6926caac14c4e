import { existsSync, fstatSync } from "node:fs";
import { loadConfig, type ConfigNeed, type ResolvedConfig } from "../core/config.ts";
import type { Core, Tuning } from "../core/index.ts";
import { openDb, type Db } from "../db/index.ts";
import { lockDb, type LockHolder } from "../db/lock.ts";
import { upgradeDb } from "../db/upgrade.ts";
import type { LocationRegistry, PhoneStore, UsageStore } from "../store/contract.ts";
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
  return loadConfig(commandEnv(io, options), need);
}

/** Config, database and core for one command; `close` when done. */
export async function openCore(io: Io, options: GlobalOptions, need: ConfigNeed, tuning?: Tuning): Promise<Core & { close(): void }> {
  const config = commandConfig(io, options, need);
  // Loaded here, not at start-up: commands that only read the store never need the HTTP clients.
  const { createCore, createLogger, writesToJournal } = await import("../sea/heavy.ts");
  const log = createLogger(config.logLevel, process.stderr, {
    format: config.logFormat,
    journal: writesToJournal(io.env.JOURNAL_STREAM, stderrId()),
  });
  const db = openExisting(config, need, (message) => log.warn(message));
  let lock: { release(): void } | undefined;
  const close = () => {
    db.close();
    lock?.release();
  };
  try {
    // Held until serve stops: no rekey or migrate while it runs, and no second serve.
    if (need === "serve") lock = lockDb(config.databasePath, "serve");
    // Only serve (and `bridge migrate`) change the schema, after a backup.
    if (need === "serve") await upgradeDb(db, config.databasePath, (message) => log.info(message));
    const core = createCore(config, db, log, Date.now, tuning);
    return { ...core, close };
  } catch (error) {
    close();
    throw error;
  }
}

/** Runs `fn` with an open core and always closes the database after. */
export async function withCore<T>(io: Io, options: GlobalOptions, need: ConfigNeed, fn: (core: Core) => T | Promise<T>, tuning?: Tuning): Promise<T> {
  const core = await openCore(io, options, need, tuning);
  try {
    return await fn(core);
  } finally {
    core.close();
  }
}

/** Runs `fn` with just the token store: what `locations` and `config` need, and all they load. */
export function withStore<T>(
  io: Io,
  options: GlobalOptions,
  fn: (tokens: LocationRegistry, config: ResolvedConfig, phones: PhoneStore, usage: UsageStore) => T | Promise<T>,
): Promise<T> {
  return withDb(io, options, async (db, config) => {
    // The values it cannot open are refused where they are used, naming their place.
    const { tokens, phones, usage } = (await import("../store/open.ts")).openStore(config, db);
    return fn(tokens, config, phones, usage);
  });
}

/**
 * Runs `fn` with the database alone, at this bridge's schema (the message log needs no
 * secrets); a promise `fn` returns (a call at Cast) is awaited before the database closes.
 */
export function withDb<T>(io: Io, options: GlobalOptions, fn: (db: Db, config: ResolvedConfig) => T): T {
  const config = commandConfig(io, options, "store");
  const db = openExisting(config, "store", (message) => io.err(`bridge: ${message}\n`));
  let result: T;
  try {
    result = fn(db, config);
  } catch (error) {
    db.close();
    throw error;
  }
  if (isPromise(result)) return result.finally(() => db.close()) as T;
  db.close();
  return result;
}

/**
 * Runs `fn` with the database itself, for commands that work on the file (backup,
 * migrate, rekey); `keepOlderSchema` lets them open one an older bridge made. `lock`:
 * the command rewrites the file, so it refuses while serve (or another such command) runs.
 */
export async function withFile<T>(
  io: Io,
  options: GlobalOptions,
  open: { keepOlderSchema?: boolean; lock?: LockHolder },
  fn: (db: Db, config: ResolvedConfig) => T | Promise<T>,
): Promise<T> {
  const config = commandConfig(io, options, "store");
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

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { finally?: unknown }).finally === "function";
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
