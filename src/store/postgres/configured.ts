import { createSealer, MEND_SEALED, type Sealer } from "../../db/sealer.ts";
import type { Store } from "../contract.ts";
import type { Database } from "../database.ts";
import { checkSealedPostgres, openPostgres, type OpenLog } from "./open.ts";
import type { Pool } from "./pool.ts";
import { openPostgresStore } from "./store.ts";

/** What opening the store on PostgreSQL needs of the configuration. */
export interface PostgresConfig {
  databaseUrl: string;
  encryptionKey: Buffer | undefined;
}

export interface PostgresOpening {
  /** Make or upgrade the schema (serve); otherwise one not this bridge's is refused. */
  create: boolean;
  /** Check the key against the sealed values (refused when it opens none); false: the command opens no secret. */
  keyCheck: boolean;
  log?: OpenLog;
}

/** Every store of the contract, each one a name: the ones PostgreSQL lacks are found by it. */
const STORE_NAMES = Object.keys({
  tokens: 1, companies: 1, jobs: 1, messages: 1, gatewayKeys: 1, optOuts: 1, replies: 1, phones: 1, phoneJobs: 1, outageRecords: 1, usage: 1, alertStore: 1, keyBudgets: 1,
} satisfies Record<keyof Store, 1>) as (keyof Store)[];

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
    return postgresDatabase(pool, sealer);
  } catch (error) {
    await pool.end();
    throw error;
  }
}

/** The database core is wired on, over a pool whose schema and key are checked. */
export function postgresDatabase(pool: Pool, sealer: Sealer): Database & { kind: "postgres" } {
  return { kind: "postgres", pool, store: wholeStore(openPostgresStore(pool, sealer)) };
}

/** The contract's stores PostgreSQL implements, and the others refusing when touched, saying which. */
function wholeStore(partial: Partial<Store>): Store {
  const store: Partial<Store> = { ...partial };
  for (const name of STORE_NAMES.filter((n) => !(n in store))) {
    Object.defineProperty(store, name, {
      enumerable: true,
      get() {
        throw new Error(`the ${name} store is not implemented on PostgreSQL yet: unset DATABASE_URL to use SQLite`);
      },
    });
  }
  return store as Store;
}
