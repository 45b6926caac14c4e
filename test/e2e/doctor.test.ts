import { chmodSync, copyFileSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { BALANCE } from "../helpers/fake-gateway.ts";
import { closedPort, jsonResponse, type Recorded } from "../helpers/http.ts";

const ADMIN = "doctor-admin-key-0123456789";
const KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const LOCATION_KEY = "loc1-own-cast-key-0123456789";

let e2e: E2E;
let server: Serve;

beforeAll(async () => {
  e2e = await e2eSetup("doctor", { INBOUND_API_KEY: ADMIN, BRIDGE_ENCRYPTION_KEY: KEY, SMS_SENDER_ID: "BRIDGE" });
  server = await startServe(e2e.env, e2e.dir);
  for (const id of ["loc-1", "loc-2"]) {
    e2e.crm.grantLocation(`code-${id}`, id);
    expect((await fetch(`${server.url}/oauth-callback?code=code-${id}`)).status).toBe(200);
  }
  // loc-2 sends with a key of its own; loc-1 with SMS_API_KEY and SMS_SENDER_ID.
  expect((await doctorBridge(e2e.env, "config", "set", "loc-2", "--sms-api-key", LOCATION_KEY, "--sender-id", "BRIDGE")).code).toBe(0);
});

afterEach(() => {
  e2e.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 1000, currency: "PHP" }));
  e2e.gateway.senderIds([{ sender_id: "BRIDGE", label: "Bridge", channel: "sms" }]);
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  if (server) await exited(server.child);
  await e2e?.close();
});

function doctorBridge(env: Record<string, string>, ...args: string[]) {
  return runBridge(env, e2e.dir, args);
}

/** `bridge doctor` with the setup's environment changed by `change`; its lines parsed. */
async function doctor(change: Record<string, string | undefined> = {}, cwd = e2e.dir) {
  const env = Object.fromEntries(Object.entries({ ...e2e.env, ...change }).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const result = await runBridge(env, cwd, ["doctor"]);
  const lines = result.stdout.trimEnd().split("\n");
  return { ...result, lines, line: (start: string) => lines.find((l) => l.startsWith(start)) };
}

describe("bridge doctor against the fake Cast and the fake HighLevel", () => {
  test("a working setup: exit 0, every line ok or warn, each part checked", async () => {
    const { code, lines, line, stderr } = await doctor();
    expect(stderr).toBe("");
    expect(code).toBe(0);
    for (const l of lines) expect(l).toMatch(/^(ok  |warn)  /);
    expect(line("ok    database schema")).toBeDefined();
    expect(line("ok    database integrity: quick_check ok")).toBeDefined();
    expect(line("ok    HighLevel reachable")).toBeDefined();
    expect(line("ok    HighLevel token loc-1: access token valid until")).toBeDefined();
    expect(line("ok    Cast reachable")).toBeDefined();
    expect(line("ok    Cast key doctor-globa...: used by SMS_API_KEY: 1000 credits")).toBeDefined();
    expect(line("ok    Cast key loc1-own-cas...: used by loc-2: 1000 credits")).toBeDefined();
    expect(line("ok    sender ID loc-1: BRIDGE, approved on key doctor-globa...")).toBeDefined();
    expect(line("ok    sender ID loc-2: BRIDGE, approved on key loc1-own-cas...")).toBeDefined();
    const all = lines.join("\n");
    for (const secret of [LOCATION_KEY, "doctor-global-sms-key", KEY, ADMIN, "doctor-client-secret"]) expect(all).not.toContain(secret);
  });

  test("approved locations of a company not in ALLOWED_COMPANY_IDS: a warning naming them, as serve's at start", async () => {
    const { code, line } = await doctor({ ALLOWED_COMPANY_IDS: "another-co" });
    expect(code).toBe(0);
    expect(line("warn  approvals: 2 approved location(s) of companies not in ALLOWED_COMPANY_IDS: loc-1 (company company-1), loc-2 (company company-1)")).toBeDefined();
    expect(line("warn  sender ID loc-1: of company company-1, not in ALLOWED_COMPANY_IDS, with no API key of its own")).toBeDefined();
    expect(line("ok    approvals")).toBeUndefined();
    expect((await doctor()).line("ok    approvals: every approved location's company is in ALLOWED_COMPANY_IDS")).toBeDefined();
  });

  test("--json: ok and one entry per check", async () => {
    const { code, stdout } = await doctorBridge(e2e.env, "doctor", "--json");
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { ok: boolean; checks: { check: string; status: string; detail: string }[] };
    expect(report.ok).toBe(true);
    expect(report.checks).toContainEqual({ check: "Cast reachable", status: "ok", detail: expect.stringContaining(e2e.gateway.url) });
  });

  test("before the first serve (no database file yet): a warning saying serve creates it, exit 0", async () => {
    const path = join(mkdtempSync(join(e2e.dir, "new-")), "bridge.db");
    const { code, line, stderr } = await doctor({ DATABASE_PATH: path });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(line(`warn  database: no database yet at ${path}: \`bridge serve\` creates it when it first starts`)).toBeDefined();
    expect(line("ok    Cast reachable")).toBeDefined();
    expect(existsSync(path)).toBe(false);
  });

  test("a database it cannot open is still a fail: exit 1", async () => {
    const path = join(mkdtempSync(join(e2e.dir, "foreign-")), "bridge.db");
    writeFileSync(path, "not sqlite at all, just text that is long enough to be a header.....................\n".repeat(10), { mode: 0o600 });
    const { code, line } = await doctor({ DATABASE_PATH: path });
    expect(code).toBe(1);
    expect(line(`fail  database: cannot open database ${path}`)).toBeDefined();
  });

  test("the .env.example placeholders: exit 1, naming each", async () => {
    const dir = mkdtempSync(join(e2e.dir, "fresh-"));
    copyFileSync(resolve(".env.example"), join(dir, ".env"));
    chmodSync(join(dir, ".env"), 0o600); // as the README installs it: it holds the client secret
    const { code, line, stderr } = await doctor({ BASE_URL: undefined, CRM_CLIENT_ID: undefined, CRM_CLIENT_SECRET: undefined, ALLOWED_COMPANY_IDS: undefined }, dir);
    expect(code).toBe(1);
    expect(line("fail  config CRM_CLIENT_ID: still the .env.example placeholder")).toBeDefined();
    expect(line("fail  config CRM_CLIENT_SECRET: still the .env.example placeholder")).toBeDefined();
    expect(line("warn  config BASE_URL: http://localhost:3000: HighLevel cannot reach this address")).toBeDefined();
    expect(line("warn  config ALLOWED_COMPANY_IDS")).toBeDefined();
    expect(stderr).toMatch(/^bridge: \d+ check\(s\) failed\n$/);
  });

  test("missing values are each a fail, and the other checks still run", async () => {
    const { code, line } = await doctor({ BASE_URL: undefined, CRM_CLIENT_SECRET: undefined, SMS_API_KEY: undefined, INBOUND_API_KEY: undefined, BRIDGE_ENCRYPTION_KEY: undefined });
    expect(code).toBe(1);
    expect(line("fail  config BASE_URL: not set")).toBeDefined();
    expect(line("fail  config CRM_CLIENT_SECRET: not set")).toBeDefined();
    expect(line("warn  config SMS_API_KEY: not set")).toBeDefined();
    expect(line("warn  config INBOUND_API_KEY: not set")).toBeDefined();
    expect(line("warn  config CRM_PROVIDER_ID: not set: every reply is refused (503)")).toBeDefined();
    expect(line("warn  config BRIDGE_ENCRYPTION_KEY: not set")).toBeDefined();
    // Without the key the sealed tokens cannot be read: said once, the remotes still checked.
    expect(line("fail  encryption key: the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY")).toBeDefined();
    expect(line("ok    Cast reachable")).toBeDefined();
  });

  test("an unreachable Cast: exit 1, naming the kind of failure", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const { code, line } = await doctor({ SMS_API_URL: url });
    expect(code).toBe(1);
    expect(line(`fail  Cast reachable: ${url}: refused (ECONNREFUSED)`)).toBeDefined();
  });

  test("a revoked key (401): exit 1 on that key's line", async () => {
    balances(() => jsonResponse({ success: false, error: "API key revoked", error_code: "API_KEY_REVOKED" }, 401), 1000);
    const { code, line } = await doctor();
    expect(code).toBe(1);
    expect(line("fail  Cast key loc1-own-cas...: used by loc-2: refused (gateway balance call answered 401: API key revoked)")).toBeDefined();
    expect(line("ok    Cast key doctor-globa...")).toBeDefined();
  });

  test("out of credit is a fail, a low balance a warn", async () => {
    balances(() => jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402), 120);
    const { code, line } = await doctor();
    expect(code).toBe(1);
    expect(line("fail  Cast key loc1-own-cas...: used by loc-2: out of credit")).toBeDefined();
    expect(line("warn  Cast key doctor-globa...: used by SMS_API_KEY: 120 credits, below LOW_BALANCE_CREDITS (500)")).toBeDefined();
  });

  test("a sender ID not approved on its key: exit 1, naming the location and the approved ones", async () => {
    e2e.gateway.senderIds([{ sender_id: "ACME", label: "Acme", channel: "sms" }, { sender_id: "SIMONLY", label: "", channel: "sim" }]);
    const { code, line } = await doctor();
    expect(code).toBe(1);
    expect(line("fail  sender ID loc-1: BRIDGE is not approved on key doctor-globa... (approved: ACME): Cast would refuse it or the carrier reject it (REJECTD)")).toBeDefined();
    expect(line("fail  sender ID SMS_SENDER_ID: BRIDGE is not approved")).toBeDefined();
  });

  test("a location whose refresh token HighLevel refused: exit 1, needs a reinstall", async () => {
    e2e.crm.uninstall("loc-1");
    const refreshed = await doctorBridge(e2e.env, "token", "refresh", "loc-1", "--force");
    expect(refreshed.code).toBe(1);
    const { code, line } = await doctor();
    expect(code).toBe(1);
    expect(line("fail  HighLevel token loc-1: needs a reinstall")).toBeDefined();
    expect(line("ok    HighLevel token loc-2")).toBeDefined();
  });
});

/** Cast's balance call answers `locationKey()` for LOCATION_KEY, and `credits` for every other key. */
function balances(locationKey: () => Response, credits: number): void {
  e2e.gateway.on(BALANCE, (req: Recorded) =>
    req.headers["x-api-key"] === LOCATION_KEY ? locationKey() : jsonResponse({ success: true, credits, currency: "PHP" }),
  );
}
