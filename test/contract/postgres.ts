import { createSealer } from "../../src/db/sealer.ts";
import type { Store } from "../../src/store/contract.ts";
import { createPool, migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { openPostgresStore, POSTGRES_STORES } from "../../src/store/postgres/store.ts";
import { startPostgres, type Postgres } from "../helpers/postgres.ts";
import type { StoreFactory } from "./store-cases.ts";

/** The key the PostgreSQL cases seal with: sealed columns are proven sealed, not stored in clear. */
export const TEST_KEY = Buffer.alloc(32, 7);

/**
 * The contract's cases on PostgreSQL: one throwaway server for the file (started by
 * start()), each case in a fresh schema of its own (search_path), dropped after.
 */
export function postgresFactory() {
  let server: Postgres | undefined;
  let admin: Pool | undefined;
  let cases = 0;
  const factory: StoreFactory = {
    name: "postgres",
    implemented: POSTGRES_STORES,
    async open() {
      const schema = `case_${++cases}`;
      await admin!.query(`CREATE SCHEMA ${schema}`);
      const pool = createPool(server!.url, schema);
      await migratePostgres(pool);
      return {
        store: whole(openPostgresStore(pool, createSealer(TEST_KEY))),
        async close() {
          await pool.end();
          await admin!.query(`DROP SCHEMA ${schema} CASCADE`);
        },
      };
    },
  };
  return {
    factory,
    /** A fresh schema's pool, for the tests that look under the contract; ended and dropped by the caller. */
    async schema(name: string): Promise<Pool> {
      await admin!.query(`CREATE SCHEMA ${name}`);
      return createPool(server!.url, name);
    },
    /** Another pool on the schema `name` made by schema(): a second server on the same database. */
    pool(name: string): Pool {
      return createPool(server!.url, name);
    },
    async drop(name: string) {
      await admin!.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    },
    async start() {
      server = await startPostgres();
      admin = createPool(server.url);
      return server.startMs;
    },
    async stop() {
      await admin?.end();
      server?.stop();
    },
  };
}

/** The stores not implemented yet throw when touched: a case that forgot to name one fails, saying which. */
function whole(partial: object): Store {
  return new Proxy(partial, {
    get(target, name) {
      if (name in target) return (target as Record<string | symbol, unknown>)[name];
      throw new Error(`store ${String(name)} is not implemented on PostgreSQL yet`);
    },
  }) as Store;
}
