import type { Db } from "../db/index.ts";
import type { Store } from "./contract.ts";
import type { Pool } from "./postgres/pool.ts";

/**
 * The database core is wired on: SQLite's one connection (the store is opened on it, in
 * src/store/open.ts), or a pool on PostgreSQL (DATABASE_URL) with its store, opened and
 * checked by src/store/postgres/configured.ts. Types only: SQLite's commands never load pg.
 */
export type Database = { kind: "sqlite"; db: Db } | { kind: "postgres"; pool: Pool; store: Store; serverId?: string };
