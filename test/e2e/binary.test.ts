import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { SCHEMA_VERSION } from "../../src/db/schema.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { BINARY, e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

const ADMIN = "e2e-admin-key-0123456789";

let e2e: E2E;
let server: Serve;
let url: string;

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

function webhook(body: unknown) {
  return e2e.webhook(url, body);
}

beforeAll(async () => {
  e2e = await e2eSetup("e2e", { INBOUND_API_KEY: ADMIN });
  server = await startServe(e2e.env, e2e.dir);
  url = server.url;
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

// One operator's session with one server, in order (vitest runs a file's tests in
// order): the first test installs loc-1, later ones read and change it, the last
// stops the server. Run alone, a later test lacks what an earlier one made.
describe("dist/bridge, as an operator runs it", () => {
  test("serve answers /healthz and an install through /oauth-callback", async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    e2e.crm.grantLocation("code-e2e", "loc-1");
    const res = await fetch(`${url}/oauth-callback?code=code-e2e`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("You can close this tab");
    expect(statSync(e2e.env.DATABASE_PATH!).mode & 0o777).toBe(0o600);
  });

  test("locations list --json shows the location and never a token", async () => {
    const { code, stdout } = await bridge("locations", "list", "--json");
    expect(code).toBe(0);
    const { locations } = JSON.parse(stdout) as { locations: { location_id: string; company_id: string }[] };
    expect(locations).toMatchObject([{ location_id: "loc-1", company_id: "company-1", sender_id: "", sms_api_key: "" }]);
    expect(stdout).not.toMatch(/at-loc-1|rt-loc-1/);
  });

  test("locations approve: approves a known location, refuses an unknown one (1) and a malformed id (2)", async () => {
    const ok = await bridge("locations", "approve", "loc-1", "--json");
    expect(ok).toMatchObject({ code: 0, stdout: `${JSON.stringify({ locations: [{ location_id: "loc-1", approved: true, off_list: false }] }, null, 2)}\n` });
    const listed = JSON.parse((await bridge("locations", "list", "--json")).stdout) as { locations: { approved: boolean }[] };
    expect(listed.locations).toMatchObject([{ approved: true }]);
    expect(await bridge("locations", "approve", "loc-9")).toMatchObject({ code: 1, stderr: "bridge: location not found: loc-9\n" });
    const bad = await bridge("config", "get", "loc-1\n[error] forged");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not a location id: "loc-1\\n[error] forged"');
  });

  test("config set --sms-api-key - takes the key from standard input, not the command line", async () => {
    const child = spawn(BINARY, ["config", "set", "loc-1", "--sms-api-key", "-", "--json"], { env: e2e.env, cwd: e2e.dir });
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stdin?.end("stdin-api-key-0123456789\n");
    expect(await exited(child)).toBe(0);
    expect(JSON.parse(out)).toEqual({ location_id: "loc-1", sender_id: "", sms_api_key: "stdin-api-ke...", monthly_cap: null });
  });

  test("config set takes effect on the running server's next message, without a restart", async () => {
    const set = await bridge("config", "set", "loc-1", "--sender-id", "BRIDGE", "--sms-api-key", "loc1-secret-api-key-xyz");
    expect(set.code).toBe(0);
    expect(set.stdout).not.toContain("loc1-secret-api-key-xyz");
    const got = await bridge("config", "get", "loc-1", "--json");
    expect(JSON.parse(got.stdout)).toEqual({ location_id: "loc-1", sender_id: "BRIDGE", sms_api_key: "loc1-secret-...", monthly_cap: null });

    expect((await webhook(outbound("e2e-1"))).status).toBe(200);
    await waitFor(() => e2e.crm.statusReports().some((r) => r.messageId === "e2e-1"));
    expect(e2e.gateway.sent().at(-1)).toEqual({ apiKey: "loc1-secret-api-key-xyz", to: "09171234567", message: "hello e2e-1", sender_id: "BRIDGE" });
  });

  test("token refresh spends the refresh token once, and the server then uses the new pair", async () => {
    const before = e2e.crm.received("POST /oauth/token").length;
    const { code, stdout } = await bridge("token", "refresh", "loc-1", "--force", "--json");
    expect(code).toBe(0);
    expect(JSON.parse(stdout).results).toMatchObject([{ location_id: "loc-1", status: "refreshed" }]);
    expect(e2e.crm.received("POST /oauth/token").length).toBe(before + 1);

    expect((await webhook(outbound("e2e-2"))).status).toBe(200);
    const report = await waitFor(() => e2e.crm.statusReports().find((r) => r.messageId === "e2e-2"));
    expect(report.authorization).not.toBe("Bearer at-loc-1-1");
    expect(report.authorization).toMatch(/^Bearer at-loc-1-\d+$/);
    expect(e2e.crm.received("POST /oauth/token").length).toBe(before + 1);
  });

  test.skipIf(process.platform !== "linux")("serve verifies on one pool thread per core, at least 2", async () => {
    // Verifying a webhook starts libuv's pool; its threads are named libuv-worker.
    expect((await webhook(outbound("e2e-pool"))).status).toBe(200);
    const tasks = readdirSync(`/proc/${server.child.pid}/task`);
    const pool = tasks.filter((tid) => readFileSync(`/proc/${server.child.pid}/task/${tid}/comm`, "utf8").trim() === "libuv-worker");
    expect(pool).toHaveLength(Math.max(2, availableParallelism()));
  });

  test("a large --json listing reaches a pipe whole", async () => {
    const db = openDb(e2e.env.DATABASE_PATH!);
    const tokens = createLocationRegistry(db);
    for (let i = 0; i < 2000; i++) {
      tokens.save({ locationId: `bulk-${i}`, companyId: "c", accessToken: "a", refreshToken: "r", expiresAt: Date.now() }, Date.now());
    }
    db.close();
    const { code, stdout } = await bridge("locations", "list", "--json");
    expect(code).toBe(0);
    expect(stdout.length).toBeGreaterThan(256 * 1024);
    expect((JSON.parse(stdout) as { locations: unknown[] }).locations).toHaveLength(2001);
  });

  test("a reader that stops early (`| head`) ends the listing quietly", async () => {
    const child = spawn(BINARY, ["locations", "list", "--json"], { env: e2e.env, cwd: e2e.dir });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    expect(await exited(child)).toBe(0);
    expect(stderr).toBe("");
  });

  test("a --db that is not bridge's database is refused and left as it was", async () => {
    const other = join(e2e.dir, "other-app.sqlite");
    const foreign = new Database(other);
    foreign.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)");
    foreign.pragma("user_version = 7"); // its own schema version: no sign of bridge's
    foreign.close();
    const before = readFileSync(other);

    for (const command of [["locations", "list"], ["config", "get", "loc-1"], ["serve"]]) {
      const { code, stdout, stderr } = await bridge("--db", other, ...command);
      expect(code).toBe(1);
      expect(stdout).toBe("");
      expect(stderr).toContain(`cannot open database ${other}: not a bridge database (it holds other tables: users)`);
    }
    expect(readFileSync(other).equals(before)).toBe(true);
    expect(existsSync(`${other}-wal`)).toBe(false);
  });

  test("a --db that cannot be opened names the file", async () => {
    const { code, stderr } = await bridge("--db", e2e.dir, "locations", "list");
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot open database ${e2e.dir}: `);
  });

  test("install-url prints only the URL", async () => {
    const { code, stdout } = await bridge("install-url");
    expect(code).toBe(0);
    expect(stdout.trim().split("\n")).toHaveLength(1);
    expect(new URL(stdout.trim()).pathname).toBe("/oauth/chooselocation");
  });

  test.each([
    [["config", "set", "nowhere", "--sender-id", "X"], 1, "location not found: nowhere"],
    [["config", "set", "loc-1"], 2, "--sender-id"],
    // A forgotten value: commander takes the next word, the sender ID rule refuses it.
    [["config", "set", "loc-1", "--sender-id", "--json"], 1, "sender_id may hold letters"],
    // A sender ID the location's key has not approved at Cast (the fake approves BRIDGE).
    [["config", "set", "loc-1", "--sender-id", "NOPE"], 1, "sender ID NOPE is not approved for this API key; approved: BRIDGE"],
    [["no-such-command"], 2, "unknown command"],
    [["token", "refresh"], 2, "--all"],
    [["token", "refresh", "loc-1", "--all"], 2, "not both (got loc-1 and --all)"],
    // Node itself reads --env-file before bridge starts (docs/cli.md, "Global options and exit codes").
    [["--env-file", "/nonexistent/bridge.env", "locations", "list"], 9, "/nonexistent/bridge.env: not found"],
  ])("bridge %j exits %i and says why on stderr", async (args, exit, message) => {
    const { code, stdout, stderr } = await bridge(...args);
    expect(code).toBe(exit);
    expect(stderr).toContain(message);
    expect(stdout).toBe("");
  });

  test("--help names the environment variables", async () => {
    const { code, stdout, stderr } = await bridge("--help");
    expect(code).toBe(0);
    // Nothing else: in particular no "Code cache data rejected", which a V8 flag among the
    // executable's execArgv causes, and with it a slower start for every command.
    expect(stderr).toBe("");
    for (const name of ["BASE_URL", "CRM_CLIENT_ID", "SMS_API_KEY", "INBOUND_API_KEY", "DATABASE_PATH"]) expect(stdout).toContain(name);
  });

  test("--version names the commit it was built from and the schema", async () => {
    const { code, stdout } = await bridge("--version");
    expect(code).toBe(0);
    const head = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" }).trim();
    expect(stdout.trim()).toMatch(new RegExp(`^bridge \\d+\\.\\d+\\.\\d+ \\(commit ${head}(-dirty)?, schema ${SCHEMA_VERSION}\\)$`));
  });

  test("serve stops cleanly on SIGTERM with exit code 0", async () => {
    server.child.kill("SIGTERM");
    expect(await exited(server.child)).toBe(0);
    expect(server.log).toContain("stopped");
    for (const secret of ["e2e-client-secret", "e2e-global-sms-key", ADMIN, "loc1-secret-api-key-xyz"]) {
      expect(server.log).not.toContain(secret);
    }
  });
});
