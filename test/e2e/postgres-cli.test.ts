import { afterAll, beforeAll, describe, expect, test } from "vitest";
import pg from "pg";
import { SCHEMA_VERSION } from "../../src/db/schema.ts";
import { e2eSetup, runBridge, runWithStdin, type E2E } from "../helpers/binary.ts";
import { postgresMissing, startPostgres, type Postgres } from "../helpers/postgres.ts";

// The built dist/bridge with DATABASE_URL on a throwaway PostgreSQL (test/helpers/postgres.ts):
// the commands that select, make and check the database. Skipped, saying why, where there is
// no PostgreSQL, except in CI (CI=true), where that fails.

const PASSWORD = "Pg-pass-7f2a9c"; // the server trusts loopback: any password is taken, and must never be shown
const KEY = "ab".repeat(32);
const OTHER_KEY = "cd".repeat(32);
const SMS_KEY = "location-sms-key-0123456789";

const missing = postgresMissing();
if (missing && process.env.CI !== "true") {
  test.skip(`dist/bridge on PostgreSQL (${missing})`, () => {});
} else if (missing) {
  test("CI has a PostgreSQL to run dist/bridge on", () => {
    throw new Error(missing);
  });
} else {
  let server: Postgres;
  let e2e: E2E;
  let admin: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startPostgres();
    const url = server.url.replace("bridge:bridge@", `bridge:${PASSWORD}@`);
    e2e = await e2eSetup("postgres-cli", { DATABASE_URL: url, BRIDGE_ENCRYPTION_KEY: KEY });
    const { DATABASE_PATH: _, ...rest } = e2e.env;
    env = rest;
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
  }, 60_000);

  afterAll(async () => {
    await admin?.end();
    await e2e?.close();
    server?.stop();
  });

  const bridge = (...args: string[]) => runBridge(env, e2e.dir, args);
  const shown = (r: { stdout: string; stderr: string }) => r.stdout + r.stderr;

  describe("dist/bridge on PostgreSQL", () => {
    test("a command other than serve and migrate refuses an empty database, saying what to run", async () => {
      const r = await bridge("locations", "list");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("has no bridge schema yet");
      expect(r.stderr).toContain("bridge migrate");
    });

    test("bridge migrate creates the schema; run again, it is up to date", async () => {
      const first = await bridge("migrate", "--json");
      expect(first.code, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({ from_version: 0, to_version: SCHEMA_VERSION, backup: null });
      expect(JSON.parse(first.stdout).database).toMatch(/^postgres:\/\/bridge:\*\*\*@127\.0\.0\.1:\d+\/bridge$/);
      expect((await admin.query("SELECT version FROM schema_version")).rows).toEqual([{ version: SCHEMA_VERSION }]);
      const again = await bridge("migrate");
      expect(again.stdout).toContain(`is up to date (schema version ${SCHEMA_VERSION})`);
      expect(shown(first) + shown(again)).not.toContain(PASSWORD);
    });

    test("locations list --json and config set work on a location inserted by SQL", async () => {
      await admin.query(
        `INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at)
         VALUES ('loc-pg', 'company-pg', 'at', 'rt', 0, 0, 0)`,
      );
      const listed = await bridge("locations", "list", "--json");
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).locations).toEqual(expect.arrayContaining([expect.objectContaining({ location_id: "loc-pg" })]));
      const set = await runWithStdin(env, e2e.dir, `${SMS_KEY}\n`, ["config", "set", "loc-pg", "--sms-api-key", "-", "--json"]);
      expect(set.code, set.err).toBe(0);
      const stored = (await admin.query("SELECT sms_api_key FROM tokens WHERE location_id = 'loc-pg'")).rows[0].sms_api_key as string;
      expect(stored.startsWith("enc:")).toBe(true);
      const got = await bridge("config", "get", "loc-pg", "--json");
      expect(got.code, got.stderr).toBe(0);
      expect(got.stdout).not.toContain(SMS_KEY);
    });

    test("bridge doctor says the database is reached, at this schema, and the key opens its values", async () => {
      const r = await bridge("doctor");
      expect(r.stdout).toMatch(/^ok {4}database: PostgreSQL at postgres:\/\/bridge:\*\*\*@127\.0\.0\.1:\d+\/bridge connected$/m);
      expect(r.stdout).toContain(`ok    database schema: version ${SCHEMA_VERSION}, this bridge's`);
      expect(r.stdout).toContain("ok    encryption key:");
      expect(shown(r)).not.toContain(PASSWORD);
    });

    test("serve with a key that opens none of the sealed values refuses to start, saying so", async () => {
      const r = await runBridge({ ...env, BRIDGE_ENCRYPTION_KEY: OTHER_KEY, HOST: "127.0.0.1", PORT: "0" }, e2e.dir, ["serve"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");
      expect(shown(r)).not.toContain("listening on");
    });

    test("a command with the wrong key is refused too", async () => {
      const r = await runBridge({ ...env, BRIDGE_ENCRYPTION_KEY: OTHER_KEY }, e2e.dir, ["locations", "list"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("is not the key this database was encrypted with");
    });

    test("bridge backup says to use pg_dump", async () => {
      const r = await bridge("backup", "copy.db");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("pg_dump");
      expect(shown(r)).not.toContain(PASSWORD);
    });

    test("with DATABASE_PATH (or --db) also set, it is ignored with a warning", async () => {
      const r = await bridge("--db", "elsewhere.db", "locations", "list", "--json");
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("DATABASE_PATH is ignored");
      expect(JSON.parse(r.stdout).locations).toEqual(expect.arrayContaining([expect.objectContaining({ location_id: "loc-pg" })]));
    });

    test("bridge migrate and rekey refuse while another server's heartbeat is fresh", async () => {
      await admin.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION - 1]);
      await admin.query("INSERT INTO servers (id, address, started_at, heartbeat_at) VALUES ('other', '10.0.0.2', 0, extract(epoch from clock_timestamp()) * 1000)");
      try {
        const migrate = await bridge("migrate");
        expect(migrate.code).toBe(1);
        expect(migrate.stderr).toContain("sent a heartbeat in the last 60 s");
        expect((await admin.query("SELECT version FROM schema_version")).rows).toEqual([{ version: SCHEMA_VERSION - 1 }]);
        await admin.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION]);
        const rekey = await runWithStdin(env, e2e.dir, `${OTHER_KEY}\n`, ["rekey", "--new-key", "-"]);
        expect(rekey.code).toBe(1);
        expect(rekey.err).toContain("sent a heartbeat in the last 60 s");
      } finally {
        await admin.query("UPDATE schema_version SET version = $1", [SCHEMA_VERSION]);
        await admin.query("DELETE FROM servers");
      }
    });

    test("bridge rekey reseals every value under the new key", async () => {
      const r = await runWithStdin(env, e2e.dir, `${OTHER_KEY}\n`, ["rekey", "--new-key", "-", "--json"]);
      expect(r.code, r.err).toBe(0);
      expect(JSON.parse(r.out)).toMatchObject({ encrypted: true });
      expect((await runBridge({ ...env, BRIDGE_ENCRYPTION_KEY: OTHER_KEY }, e2e.dir, ["locations", "list"])).code).toBe(0);
      expect((await bridge("locations", "list")).stderr).toContain("is not the key this database was encrypted with");
    });

    test("an unreachable DATABASE_URL fails within seconds, saying so, the password masked", async () => {
      const started = Date.now();
      const url = `postgres://bridge:${PASSWORD}@10.255.255.1:5432/bridge`;
      const r = await runBridge({ ...env, DATABASE_URL: url }, e2e.dir, ["locations", "list"]);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("cannot connect to PostgreSQL at postgres://bridge:***@10.255.255.1:5432/bridge");
      expect(shown(r)).not.toContain(PASSWORD);
      const doctor = await runBridge({ ...env, DATABASE_URL: url }, e2e.dir, ["doctor"]);
      expect(doctor.stdout).toContain("fail  database: cannot connect to PostgreSQL at postgres://bridge:***@10.255.255.1:5432/bridge");
      expect(shown(doctor)).not.toContain(PASSWORD);
    }, 30_000);

    test("a DATABASE_URL that is not PostgreSQL's is refused as bad configuration, without repeating it", async () => {
      const r = await runBridge({ ...env, DATABASE_URL: `mysql://bridge:${PASSWORD}@db/bridge` }, e2e.dir, ["locations", "list"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("DATABASE_URL: must be a postgres:// or postgresql:// URL");
      expect(shown(r)).not.toContain(PASSWORD);
    });
  });
}
