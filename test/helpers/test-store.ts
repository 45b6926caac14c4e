import { test } from "vitest";
import type { ResolvedConfig } from "../../src/core/config.ts";
import type { Logger } from "../../src/core/log.ts";
import { openDb, type Db } from "../../src/db/index.ts";
import type { Database } from "../../src/store/database.ts";
import { openConfiguredPostgres } from "../../src/store/postgres/configured.ts";
import { createPool } from "../../src/store/postgres/pool.ts";
import { startPostgres, type Postgres } from "./postgres.ts";

/**
 * Which store the integration tests' bridges run on: SQLite (a file per bridge, the
 * default) or, with BRIDGE_TEST_STORE=postgres, PostgreSQL: one throwaway server per
 * test file (test/helpers/postgres.ts), a schema of its own per bridge's database,
 * named in DATABASE_URL (`options=-c search_path=…`), so a bridge restarted on the
 * first one's DATABASE_PATH finds the first one's schema.
 */
export const TEST_STORE: "sqlite" | "postgres" = process.env.BRIDGE_TEST_STORE === "postgres" ? "postgres" : "sqlite";

let server: Promise<Postgres> | undefined;
let schemas = 0;
/** Each database file's schema: a bridge restarted on a DATABASE_PATH gets the same. */
const urls = new Map<string, string>();

/** What the bridge's environment gains for its database: on PostgreSQL, DATABASE_URL with its own schema. */
export async function databaseEnv(env: Record<string, string>): Promise<Record<string, string>> {
  if (TEST_STORE === "sqlite" || env.DATABASE_URL) return {};
  const path = env.DATABASE_PATH ?? "";
  const known = urls.get(path);
  if (known) return { DATABASE_URL: known };
  server ??= startPostgres();
  const { url } = await server;
  const schema = `test_${process.pid}_${++schemas}`;
  const admin = createPool(url);
  await admin.query(`CREATE SCHEMA ${schema}`).finally(() => admin.end());
  const withSchema = `${url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  urls.set(path, withSchema);
  return { DATABASE_URL: withSchema };
}

/**
 * Stops this file's throwaway PostgreSQL, if it started one: vitest ends its workers
 * without their `exit` event, so stop() at exit alone left every file's server running
 * after the run. Run after each file by test/helpers/postgres-setup.ts.
 */
export async function stopTestPostgres(): Promise<void> {
  const started = server;
  server = undefined;
  urls.clear();
  (await started?.catch(() => undefined))?.stop();
}

/**
 * A command's environment on a test bridge's database, as an operator sets it: on
 * PostgreSQL, the bridge's DATABASE_URL in place of its DATABASE_PATH (with both set,
 * every command warns that DATABASE_PATH is ignored). A path no bridge opened stays.
 */
export function commandEnv(env: Record<string, string>): Record<string, string> {
  if (TEST_STORE === "sqlite") return env;
  const url = env.DATABASE_URL || urls.get(env.DATABASE_PATH ?? "");
  if (!url) return env;
  const { DATABASE_PATH: _path, ...rest } = env;
  return { ...rest, DATABASE_URL: url };
}

/**
 * `sqliteOnly(why)` in place of `test`: a test that reaches under the store into SQLite
 * itself (openDb, the file, better-sqlite3, PRAGMAs, an old schema's file). It runs on
 * SQLite and is skipped on PostgreSQL; `why` says what it reaches for. Whole files of
 * such tests are listed in SQLITE_ONLY_FILES (test/helpers/sqlite-only.ts).
 */
export function sqliteOnly(why: string): typeof test.skip {
  return TEST_STORE === "postgres" ? test.skip : test;
}

/** The database a test's core is wired on, as serve opens it (schema made, key checked); `close` ends it. */
export async function openTestDatabase(config: ResolvedConfig, log: Logger): Promise<{ source: Db | Database; close(): Promise<void> }> {
  if (!config.databaseUrl) {
    const db = openDb(config.databasePath);
    return {
      source: db,
      close: async () => {
        db.close();
      },
    };
  }
  const database = await openConfiguredPostgres(config, { create: true, keyCheck: true, log });
  return { source: database, close: () => database.pool.end() };
}
