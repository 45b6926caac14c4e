import { SCHEMA_VERSION } from "../../db/schema.ts";
import { judgeSealed, sealedQuery, sealedValues } from "../../db/key-check.ts";
import { SEALED_COLUMNS } from "../../db/rekey.ts";
import type { Sealer } from "../../db/sealer.ts";
import { maskDatabaseUrl, withoutPassword } from "./url.ts";
import { SERVER_ALIVE_MS } from "../contract-servers.ts";
import { errorMessage } from "../../errors.ts";
import { createPool, migratePostgres, type Pool, type Queryable } from "./pool.ts";

/** How the opener of the database is told what it found. */
export interface OpenLog {
  warn(message: string): void;
}

/** A server whose heartbeat is this recent is alive (src/store/contract-servers.ts). */
const ALIVE_MS = SERVER_ALIVE_MS;

/**
 * A pool on DATABASE_URL, connected and at this bridge's schema. `create`: an empty or
 * older schema is made or brought up to date under the schema lock (serve, as it creates
 * a SQLite file); otherwise one the command cannot use is refused, saying what to run. A
 * newer schema is refused always. Errors name the URL with its password masked.
 */
export async function openPostgres(url: string, create: boolean, log?: OpenLog): Promise<Pool> {
  const pool = createPool(url);
  // An idle connection the server dropped: said, not an unhandled 'error' that ends the process.
  pool.on("error", (error) => log?.warn(`PostgreSQL connection lost: ${withoutPassword(errorMessage(error), url)}`));
  try {
    await connect(pool, url);
    if (create) await migratePostgres(pool, (client) => refuseUpgradeUnderOthers(client));
    else refuseSchema(await postgresSchemaVersion(pool));
    return pool;
  } catch (error) {
    await pool.end();
    throw scrubbed(error, url);
  }
}

/** `error`, or when its message quotes the URL's password, the same said without it. */
function scrubbed(error: unknown, url: string): unknown {
  const said = errorMessage(error);
  const clean = withoutPassword(said, url);
  // No cause: a log that prints causes would print the password.
  return clean === said ? error : new Error(clean);
}

/**
 * Runs `fn` with a connected pool on `url`, at whatever schema (migrate, rekey), ended
 * after. An error that quotes the password is said without it.
 */
export async function withPool<T>(url: string, fn: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = createPool(url);
  pool.on("error", () => {}); // an idle connection dropped: the next statement says so
  try {
    await connect(pool, url);
    return await fn(pool);
  } catch (error) {
    throw scrubbed(error, url);
  } finally {
    await pool.end();
  }
}

/** The first connection, saying where it went when it fails (an unreachable host within the connect timeout). */
export async function connect(db: Queryable, url: string): Promise<void> {
  try {
    await db.query("SELECT 1");
  } catch (error) {
    throw new Error(`cannot connect to PostgreSQL at ${maskDatabaseUrl(url)}: ${errorMessage(error) || "connection timed out"}`, { cause: error });
  }
}

/** The schema version recorded in the database; 0 for an empty one. */
export async function postgresSchemaVersion(db: Queryable): Promise<number> {
  const found = await db.query<{ table: string | null }>("SELECT to_regclass('schema_version')::text AS table");
  if (!found.rows[0]?.table) return 0;
  return (await db.query<{ version: number }>("SELECT version FROM schema_version")).rows[0]?.version ?? 0;
}

/** Why a command other than serve and migrate cannot use a schema of `version`; nothing when it is this bridge's. */
export function schemaProblem(version: number): string | undefined {
  if (version === SCHEMA_VERSION) return undefined;
  if (version > SCHEMA_VERSION) return `database schema version ${version} is newer than this bridge (${SCHEMA_VERSION}); upgrade bridge`;
  if (version === 0) return "the PostgreSQL database has no bridge schema yet: `bridge serve` creates it when it first starts, or run `bridge migrate`";
  return `the PostgreSQL database is at schema version ${version}; this bridge needs ${SCHEMA_VERSION}: run \`bridge migrate\`, or start the new bridge serve`;
}

function refuseSchema(version: number): void {
  const problem = schemaProblem(version);
  if (problem) throw new Error(problem);
}

/** How many servers' heartbeats are fresh, on the database's clock; 0 before the table exists. */
export async function aliveServers(db: Queryable): Promise<number> {
  const found = await db.query<{ table: string | null }>("SELECT to_regclass('servers')::text AS table");
  if (!found.rows[0]?.table) return 0;
  const alive = await db.query<{ n: number }>(
    "SELECT count(*) AS n FROM servers WHERE heartbeat_at > extract(epoch from clock_timestamp()) * 1000 - $1",
    [ALIVE_MS],
  );
  return alive.rows[0]?.n ?? 0;
}

/**
 * serve's check before it makes or upgrades the schema: an older schema is not upgraded
 * under servers still running on it (they would run statements it no longer fits).
 */
async function refuseUpgradeUnderOthers(client: Queryable): Promise<void> {
  const from = await postgresSchemaVersion(client);
  if (from === 0 || from >= SCHEMA_VERSION) return;
  const alive = await aliveServers(client);
  if (alive > 0) {
    throw new Error(
      `the database's schema is version ${from}, older than this bridge's ${SCHEMA_VERSION}, and ${alive} bridge serve(s) sent a heartbeat in the last ${ALIVE_MS / 1000} s: stop them, then start this one (it upgrades the schema) or run bridge migrate`,
    );
  }
}

/** Refuses while another server is alive: `what` would change the database under it. */
export async function refuseWhileAlive(db: Queryable, what: string, force = false): Promise<void> {
  const alive = await aliveServers(db);
  if (alive > 0 && !force) {
    throw new Error(`${alive} bridge serve(s) on this database sent a heartbeat in the last ${ALIVE_MS / 1000} s: stop them before ${what} (or --force, if they are gone)`);
  }
}

/** checkSealed (src/db/key-check.ts) over the pool: throws when the key opens none of the sealed values; else why each unopenable one is. */
export async function checkSealedPostgres(db: Queryable, sealer: Sealer): Promise<string[]> {
  const values = [];
  for (const columns of SEALED_COLUMNS) values.push(...sealedValues((await db.query<Record<string, unknown>>(sealedQuery(columns))).rows, columns));
  return judgeSealed(values, sealer);
}
