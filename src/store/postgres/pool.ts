import pg from "pg";
import { SCHEMA_VERSION } from "../../db/schema.ts";
import { BASELINE, BASELINE_VERSION, PG_MIGRATIONS } from "./schema.ts";

export type Pool = pg.Pool;
export type Client = pg.PoolClient;
/** What runs a statement: the pool (a statement alone) or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

const INT8 = 20;
const NUMERIC = 1700;

/** bigint (times in ms, ids, counts) as JavaScript numbers, as SQLite gives them: all stay below 2^53. */
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** How long a new connection may take: an unreachable server is said so in seconds, not at the system's TCP timeout. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** A pool of connections to `url`; `searchPath` puts every table in that schema (the tests' own). */
export function createPool(url: string, searchPath?: string, max = 4): Pool {
  const options = searchPath ? `-c search_path=${searchPath}` : undefined;
  return new pg.Pool({ connectionString: url, options, max, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
}

/** Runs `fn` in one transaction on one connection: committed when it returns, rolled back when it throws. */
export async function transaction<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    client.release();
    return result;
  } catch (error) {
    // A connection that cannot roll back is not given back to the pool: it is closed.
    const broken = await client.query("ROLLBACK").then(() => undefined, (failed: Error) => failed);
    client.release(broken);
    throw error;
  }
}

/** The advisory lock of schema changes: servers starting together make the schema once. */
export const SCHEMA_LOCK = 0x62726467; // "brdg"

/**
 * Brings the database's schema to SCHEMA_VERSION: an empty one gets the baseline, then
 * the versions after it, all in one transaction under the schema lock. A schema newer
 * than this bridge is refused, as on SQLite (src/db/schema.ts). `check` runs under the
 * lock first and may refuse (`bridge migrate` while another server runs).
 */
export async function migratePostgres(pool: Pool, check?: (client: Client) => Promise<void>): Promise<void> {
  await transaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
    await check?.(client);
    const found = await client.query<{ table: string | null }>("SELECT to_regclass('schema_version')::text AS table");
    let current = 0;
    if (found.rows[0]?.table) {
      current = (await client.query<{ version: number }>("SELECT version FROM schema_version")).rows[0]?.version ?? 0;
    }
    if (current > SCHEMA_VERSION) {
      throw new Error(`database schema version ${current} is newer than this bridge (${SCHEMA_VERSION}); upgrade bridge`);
    }
    if (current === SCHEMA_VERSION) return;
    if (current === 0) {
      await client.query(BASELINE);
      await client.query("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (0)");
      current = BASELINE_VERSION;
    }
    for (const sql of PG_MIGRATIONS.slice(current - BASELINE_VERSION)) await client.query(sql);
    await client.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION]);
  });
}
