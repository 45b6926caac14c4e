import { createSealer, MEND_SEALED, type Sealer } from "../../db/sealer.ts";
import { DEFAULT_USAGE_ZONE, monthIn } from "../../db/usage-month.ts";
import type { Database } from "../database.ts";
import { checkSealedPostgres, openPostgres, type OpenLog } from "./open.ts";
import type { Pool } from "./pool.ts";
import { openPostgresStore, type PostgresStoreOptions } from "./store.ts";

/** What opening the store on PostgreSQL needs of the configuration. */
export interface PostgresConfig {
  databaseUrl: string;
  encryptionKey: Buffer | undefined;
  /** The IANA zone whose months usage counts in (USAGE_TIME_ZONE); Asia/Manila when not given. */
  usageTimeZone?: string;
}

export interface PostgresOpening {
  /** Make or upgrade the schema (serve); otherwise one not this bridge's is refused. */
  create: boolean;
  /** Check the key against the sealed values (refused when it opens none); false: the command opens no secret. */
  keyCheck: boolean;
  log?: OpenLog;
  /** The server whose claims the store names (serve: src/core/servers.ts, newServerId); none for other commands. */
  serverId?: string;
}

/**
 * The store on DATABASE_URL, as serve and the CLI open it: the pool connected, the schema
 * checked (or made), the key checked as on SQLite: one that opens none of the sealed values
 * is refused (the server does not start); the values it cannot open are warned about.
 * The pool is the caller's to end.
 */
export async function openConfiguredPostgres(config: PostgresConfig, opening: PostgresOpening): Promise<Database & { kind: "postgres" }> {
  const pool = await openPostgres(config.databaseUrl, opening.create, opening.log);
  try {
    const sealer = createSealer(config.encryptionKey);
    if (opening.keyCheck) {
      for (const unopenable of await checkSealedPostgres(pool, sealer)) {
        opening.log?.warn(`${unopenable}: not used, and what needs it waits (the others work); ${MEND_SEALED}`);
      }
    }
    const monthOf = monthIn(config.usageTimeZone ?? DEFAULT_USAGE_ZONE);
    return postgresDatabase(pool, sealer, { monthOf, serverId: opening.serverId });
  } catch (error) {
    await pool.end();
    throw error;
  }
}

/** The database core is wired on, over a pool whose schema and key are checked. */
export function postgresDatabase(pool: Pool, sealer: Sealer, options: PostgresStoreOptions = {}): Database & { kind: "postgres" } {
  return { kind: "postgres", pool, store: openPostgresStore(pool, sealer, options), serverId: options.serverId };
}
