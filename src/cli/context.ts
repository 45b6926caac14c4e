import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { loadConfig, type ConfigNeed, type ResolvedConfig } from "../core/config.ts";
import { createCore, type Core } from "../core/index.ts";
import { createLogger } from "../core/log.ts";
import { openDb } from "../db/index.ts";
import { UsageError, type Io } from "./io.ts";

export interface GlobalOptions {
  db?: string;
  envFile?: string;
}

/**
 * The environment a command runs with: a .env file (`--env-file`, else ./.env if
 * present) under the real environment, which wins; `--db` over DATABASE_PATH.
 */
export function commandEnv(io: Io, options: GlobalOptions): Record<string, string | undefined> {
  const file = options.envFile ?? (existsSync(".env") ? ".env" : undefined);
  let fromFile: Record<string, string | undefined> = {};
  if (file) {
    if (!existsSync(file)) throw new UsageError(`env file not found: ${file}`);
    fromFile = parseEnv(readFileSync(file, "utf8"));
  }
  const env = { ...fromFile, ...io.env };
  if (options.db) env.DATABASE_PATH = options.db;
  return env;
}

export function commandConfig(io: Io, options: GlobalOptions, need: ConfigNeed): ResolvedConfig {
  return loadConfig(commandEnv(io, options), need);
}

/** Config, database and core for one command; `close` when done. */
export function openCore(io: Io, options: GlobalOptions, need: ConfigNeed): Core & { close(): void } {
  const config = commandConfig(io, options, need);
  // Only the server creates the database; a typo in --db should not make a new, empty one.
  if (need !== "serve" && !existsSync(config.databasePath)) {
    throw new Error(`database not found: ${config.databasePath} (set DATABASE_PATH or --db)`);
  }
  const db = openDb(config.databasePath);
  const core = createCore(config, db, createLogger(config.logLevel));
  return { ...core, close: () => db.close() };
}

/** Runs `fn` with an open core and always closes the database after. */
export async function withCore<T>(io: Io, options: GlobalOptions, need: ConfigNeed, fn: (core: Core) => T | Promise<T>): Promise<T> {
  const core = openCore(io, options, need);
  try {
    return await fn(core);
  } finally {
    core.close();
  }
}
