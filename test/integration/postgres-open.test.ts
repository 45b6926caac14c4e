import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SCHEMA_VERSION } from "../../src/db/schema.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { openConfiguredPostgres } from "../../src/store/postgres/configured.ts";
import { postgresSchemaVersion } from "../../src/store/postgres/open.ts";
import { createPool, type Pool } from "../../src/store/postgres/pool.ts";
import { rekeyPostgres } from "../../src/store/postgres/rekey.ts";
import { postgresMissing, startPostgres, type Postgres } from "../helpers/postgres.ts";

// Opening the store on DATABASE_URL as serve and the CLI do (src/store/postgres/configured.ts),
// and `rekey` on it, on a throwaway PostgreSQL: one server for the file, a schema per test.

const KEY = Buffer.alloc(32, 1);
const OTHER = Buffer.alloc(32, 2);
const seal = (key: Buffer, plain: string, row: string, column = "access_token") =>
  createSealer(key).seal(plain, { table: "tokens", column, row });

const missing = postgresMissing();
if (missing && process.env.CI !== "true") {
  test.skip(`postgres: opening the configured store (${missing})`, () => {});
} else if (missing) {
  test("postgres: CI has a PostgreSQL to open the configured store on", () => {
    throw new Error(missing);
  });
} else {
  let server: Postgres;
  let admin: Pool;
  let schemas = 0;
  const opened: Pool[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    admin = createPool(server.url);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(opened.map((pool) => pool.end()));
    await admin?.end();
    server?.stop();
  });

  /** A DATABASE_URL whose tables live in a schema of their own. */
  async function freshUrl(): Promise<string> {
    const schema = `open_${++schemas}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    return `${server.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  }

  async function open(databaseUrl: string, options: { create?: boolean; key?: Buffer; warnings?: string[] } = {}) {
    const log = { warn: (message: string) => options.warnings?.push(message) };
    const database = await openConfiguredPostgres({ databaseUrl, encryptionKey: options.key }, { create: options.create ?? false, keyCheck: true, log });
    opened.push(database.pool);
    return database;
  }

  async function addLocation(url: string, id: string, accessToken: string) {
    const pool = createPool(url);
    await pool.query(
      "INSERT INTO tokens (location_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ($1, $2, '', 0, 0, 0)",
      [id, accessToken],
    );
    await pool.end();
  }

  describe("the configured store on PostgreSQL", () => {
    test("serve's opening creates the schema once when servers start together", async () => {
      const url = await freshUrl();
      const all = await Promise.all([1, 2, 3].map(() => open(url, { create: true })));
      expect(await postgresSchemaVersion(all[0]!.pool)).toBe(SCHEMA_VERSION);
      expect(await all[1]!.store.tokens.ids()).toEqual([]);
    });

    test("another command refuses an empty schema and an older one, saying to run bridge migrate", async () => {
      const url = await freshUrl();
      await expect(open(url)).rejects.toThrow("has no bridge schema yet");
      await open(url, { create: true });
      const pool = createPool(url);
      await pool.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION - 1]);
      await expect(open(url)).rejects.toThrow(`at schema version ${SCHEMA_VERSION - 1}; this bridge needs ${SCHEMA_VERSION}: run \`bridge migrate\``);
      await pool.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION + 1]);
      await expect(open(url, { create: true })).rejects.toThrow("newer than this bridge");
      await expect(open(url)).rejects.toThrow("newer than this bridge");
      await pool.end();
    });

    test("serve does not upgrade an older schema while another server's heartbeat is fresh", async () => {
      const url = await freshUrl();
      await open(url, { create: true });
      const pool = createPool(url);
      await pool.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION - 1]);
      await pool.query("INSERT INTO servers (id, address, started_at, heartbeat_at) VALUES ('old', '10.0.0.2', 0, extract(epoch from clock_timestamp()) * 1000)");
      await expect(open(url, { create: true })).rejects.toThrow(
        `the database's schema is version ${SCHEMA_VERSION - 1}, older than this bridge's ${SCHEMA_VERSION}, and 1 bridge serve(s) sent a heartbeat in the last 60 s: stop them`,
      );
      expect((await pool.query("SELECT version FROM schema_version")).rows).toEqual([{ version: SCHEMA_VERSION - 1 }]);
      await pool.end();
    });

    test("a key that opens none of the sealed values is refused; one that opens some warns of the others by place", async () => {
      const url = await freshUrl();
      await open(url, { create: true });
      await addLocation(url, "loc-a", seal(KEY, "token-a", "loc-a"));
      await expect(open(url, { create: true, key: OTHER })).rejects.toThrow("BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");
      await expect(open(url)).rejects.toThrow("set BRIDGE_ENCRYPTION_KEY");
      await addLocation(url, "loc-b", seal(OTHER, "token-b", "loc-b"));
      const warnings: string[] = [];
      const { store } = await open(url, { create: true, key: KEY, warnings });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain("tokens.access_token of loc-b");
      expect((await store.tokens.get("loc-a"))?.accessToken).toBe("token-a");
    });

    test("the configured store counts usage in USAGE_TIME_ZONE's months", async () => {
      // 2026-01-31 12:00 UTC is still January in Manila (UTC+8), already February on Kiritimati (UTC+14).
      const now = Date.UTC(2026, 0, 31, 12);
      const months = [];
      for (const usageTimeZone of [undefined, "Pacific/Kiritimati"]) {
        const database = await openConfiguredPostgres({ databaseUrl: await freshUrl(), encryptionKey: undefined, usageTimeZone }, { create: true, keyCheck: true });
        opened.push(database.pool);
        const reply = {
          inboundId: "in-1", source: "api", dedupeKey: "key-1", phone: "+639171234567", text: "hi", to: "", deviceId: "", receivedAt: "",
          receivedMs: now, sourceId: "", locationId: "loc-1", routedBy: "given", optOut: "",
        } as const;
        await database.store.replies.receive(reply, now);
        months.push((await database.store.usage.list({})).map((row) => row.month));
      }
      expect(months).toEqual([["2026-01"], ["2026-02"]]);
    });

    test("rekey reseals every value under the new key, and --decrypt stores them plain", async () => {
      const url = await freshUrl();
      await open(url, { create: true });
      await addLocation(url, "loc-a", seal(KEY, "token-a", "loc-a"));
      const pool = createPool(url);
      opened.push(pool);
      expect(await rekeyPostgres(pool, createSealer(KEY), createSealer(OTHER))).toBe(1);
      expect((await (await open(url, { key: OTHER })).store.tokens.get("loc-a"))?.accessToken).toBe("token-a");
      await expect(open(url, { key: KEY })).rejects.toThrow("is not the key");
      expect(await rekeyPostgres(pool, createSealer(OTHER), createSealer(undefined))).toBe(1);
      expect((await pool.query("SELECT access_token FROM tokens")).rows).toEqual([{ access_token: "token-a" }]);
    });

    test("rekey changes nothing when a value opens with neither key", async () => {
      const url = await freshUrl();
      await open(url, { create: true });
      await addLocation(url, "loc-a", seal(KEY, "token-a", "loc-a"));
      await addLocation(url, "loc-b", seal(OTHER, "token-b", "loc-b"));
      const pool = createPool(url);
      opened.push(pool);
      const before = (await pool.query("SELECT location_id, access_token FROM tokens ORDER BY location_id")).rows;
      await expect(rekeyPostgres(pool, createSealer(KEY), createSealer(Buffer.alloc(32, 3)))).rejects.toThrow("nothing was changed");
      expect((await pool.query("SELECT location_id, access_token FROM tokens ORDER BY location_id")).rows).toEqual(before);
    });
  });
}
