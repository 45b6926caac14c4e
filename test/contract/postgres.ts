import { createSealer } from "../../src/db/sealer.ts";
import { createPool, migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { openPostgresStore } from "../../src/store/postgres/store.ts";
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
    async open() {
      const schema = `case_${++cases}`;
      await admin!.query(`CREATE SCHEMA ${schema}`);
      const pool = createPool(server!.url, schema);
      await migratePostgres(pool);
      return {
        store: openPostgresStore(pool, createSealer(TEST_KEY)),
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
    /** Another pool on a schema made by schema(): a second server on the same database; ended by the caller. */
    connect(name: string): Pool {
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

