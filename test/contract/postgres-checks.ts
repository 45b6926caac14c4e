import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { SCHEMA_VERSION } from "../../src/db/schema.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { migratePostgres, transaction, type Pool } from "../../src/store/postgres/pool.ts";
import { openPostgresStore } from "../../src/store/postgres/store.ts";
import { fenceChecks } from "./postgres-checks-fence.ts";
import { inboundChecks } from "./postgres-checks-inbound.ts";
import { jobChecks } from "./postgres-checks-jobs.ts";
import { TEST_KEY, type postgresFactory } from "./postgres.ts";
import { message } from "./store-cases.ts";

export type Postgres = ReturnType<typeof postgresFactory>;

/** Runs `fn` on a fresh schema's pool, dropped after. */
export async function inSchema(postgres: Postgres, name: string, fn: (pool: Pool) => Promise<void>): Promise<void> {
  const pool = await postgres.schema(name);
  try {
    await fn(pool);
  } finally {
    await pool.end();
    await postgres.drop(name);
  }
}

/** What is PostgreSQL's own under the contract: its schema, made once, and what it stores. */
export function postgresChecks(postgres: Postgres): void {
  test("postgres: servers starting together make the schema once", () =>
    inSchema(postgres, "together", async (pool) => {
      await Promise.all([1, 2, 3].map(() => migratePostgres(pool)));
      expect((await pool.query("SELECT version FROM schema_version")).rows).toEqual([{ version: SCHEMA_VERSION }]);
    }));

  test("postgres: a schema newer than this bridge is refused", () =>
    inSchema(postgres, "newer", async (pool) => {
      await migratePostgres(pool);
      await pool.query("UPDATE schema_version SET version = version + 1");
      await expect(migratePostgres(pool)).rejects.toThrow(/newer than this bridge/);
    }));

  test("postgres: the schema has SQLite's tables, columns (in their order) and indexes", () =>
    inSchema(postgres, "columns", async (pool) => {
      await migratePostgres(pool);
      const found = await pool.query<{ table_name: string; column_name: string }>(`
        SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = 'columns' AND table_name <> 'schema_version' ORDER BY table_name COLLATE "C", ordinal_position`);
      const sqlite = sqliteSchema();
      expect(found.rows.map((r) => `${r.table_name}.${r.column_name}`)).toEqual(sqlite.columns);
      // The indexes of primary keys and unique columns are named by each database its own way: left out.
      const indexes = await pool.query<{ indexname: string }>(`
        SELECT indexname FROM pg_indexes WHERE schemaname = 'columns'
          AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE connamespace = 'columns'::regnamespace)`);
      expect(indexes.rows.map((r) => r.indexname).sort()).toEqual(sqlite.indexes);
    }));

  test("postgres: a transaction that throws writes nothing, and its connection serves again", () =>
    inSchema(postgres, "rollback", async (pool) => {
      await migratePostgres(pool);
      const write = transaction(pool, async (client) => {
        await client.query("INSERT INTO outages (remote, since, kind, reason, failed_calls, last_failed_at) VALUES ('cast', 1, 'k', 'r', 1, 1)");
        await client.query("INSERT INTO outages (remote, since, kind, reason, failed_calls, last_failed_at) VALUES ('cast', 1, 'k', 'r', 1, 1)");
      });
      await expect(write).rejects.toThrow(/duplicate key/);
      expect((await pool.query("SELECT count(*) AS n FROM outages")).rows).toEqual([{ n: 0 }]);
      expect(await transaction(pool, async (client) => (await client.query("SELECT 1 AS one")).rows)).toEqual([{ one: 1 }]);
    }));

  test("postgres: a token is stored sealed, and opens only in its own row", () =>
    inSchema(postgres, "sealed", async (pool) => {
      await migratePostgres(pool);
      const store = openPostgresStore(pool, createSealer(TEST_KEY));
      const token = { companyId: "co-1", accessToken: "secret-at", refreshToken: "secret-rt", expiresAt: 1 };
      await store.tokens.save({ ...token, locationId: "loc-1" }, 1);
      await store.tokens.save({ ...token, locationId: "loc-2", accessToken: "other" }, 1);
      const stored = (await pool.query("SELECT access_token FROM tokens WHERE location_id = 'loc-1'")).rows[0].access_token;
      expect(stored).not.toContain("secret-at");
      await pool.query("UPDATE tokens SET access_token = $1 WHERE location_id = 'loc-2'", [stored]);
      await expect(store.tokens.get("loc-2")).rejects.toThrow(/tokens\.access_token of loc-2/);
      expect((await store.tokens.get("loc-1"))?.accessToken).toBe("secret-at");
    }));
  inboundChecks(postgres);

  test("postgres: two servers racing to claim the same job: exactly one wins, each of 20 times", () =>
    inSchema(postgres, "race", async (pool) => {
      await migratePostgres(pool);
      const other = postgres.connect("race");
      try {
        const servers = [pool, other, pool, other].map((p) => openPostgresStore(p, createSealer(TEST_KEY)));
        const jobs = Array.from({ length: 20 }, (_, i) => i + 1);
        for (const n of jobs) await servers[0]!.jobs.enqueue(message(n), 1);
        // Half the jobs reserve parts (the claim locks the row first), half do not (the UPDATE alone decides).
        const race = (n: number) =>
          Promise.all(servers.map((server, i) => {
            const claim = { idempotencyKey: `idem-${n}-${i}`, apiKeyTag: "tag-1", ...(n % 2 ? { parts: 1 } : {}) };
            return server.jobs.claimForSending(n, 2, claim, { masked: "ab…yz", apiKey: "key-1" });
          }));
        const wins = await Promise.all(jobs.map(race));
        expect(wins.map((won) => won.filter(Boolean).length)).toEqual(jobs.map(() => 1));
        const rows = await pool.query("SELECT attempts, state FROM jobs ORDER BY id");
        expect(rows.rows).toEqual(jobs.map(() => ({ attempts: 1, state: "sending" })));
        expect((await pool.query("SELECT parts FROM usage_reserved")).rows).toEqual([{ parts: 10 }]);
      } finally {
        await other.end();
      }
    }));

  jobChecks(postgres);
  fenceChecks(postgres);
}

/** Every table.column of a new SQLite database, sorted as the PostgreSQL query sorts them, and its indexes by name. */
function sqliteSchema(): { columns: string[]; indexes: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "bridge-columns-"));
  const db = openDb(join(dir, "bridge.db"));
  const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
  const indexes = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all();
  const columns = tables.flatMap(({ name }) => db.prepare<[], { name: string }>(`PRAGMA table_info(${name})`).all().map((c) => `${name}.${c.name}`));
  db.close();
  rmSync(dir, { recursive: true, force: true });
  const table = (column: string) => column.split(".")[0]!;
  const sorted = columns.sort((a, b) => (table(a) < table(b) ? -1 : table(a) > table(b) ? 1 : 0));
  return { columns: sorted, indexes: indexes.map((i) => i.name).sort() };
}
