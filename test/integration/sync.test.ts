import { describe, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID, fieldsOf } from "../helpers/fake-crm.ts";
import { jsonResponse } from "../helpers/http.ts";
import { commandEnv } from "../helpers/test-store.ts";

/**
 * Reconciliation with HighLevel's installed locations, the core and the CLI, through real HTTP
 * (docs/operations.md, "Agencies: what you do once, and what happens by itself after").
 */

const start = bridgePerTest();

async function agencyInstall(b: Bridge, ids: string[]) {
  b.crm.installed.ids = ids;
  b.crm.grantCompany("code-co");
  expect((await b.fetch("/oauth-callback?code=code-co")).status).toBe(200);
}

function tokenFetches(b: Bridge): string[] {
  return b.crm.received("POST /oauth/locationToken").map((r) => String(fieldsOf(r).locationId));
}

/** `bridge …` in this process, on the bridge's database, as the CLI runs it. */
async function cli(b: Bridge, args: string[], terminal = false) {
  let stdout = "";
  let stderr = "";
  const io = { out: (t: string) => (stdout += t), err: (t: string) => (stderr += t), env: commandEnv(b.env), errIsTerminal: () => terminal };
  const code = await run(args, io);
  return { code, stdout, stderr };
}

describe("reconciliation", () => {
  test("adds locations installed since, marks the ones no longer installed (kept), records names", async () => {
    const b = await start();
    await agencyInstall(b, ["a", "b"]);
    await b.core.tokens.setConfig("b", { senderId: "KEEPME" }, Date.now());
    expect((await b.webhook(outbound("m-b", { locationId: "b" }))).status).toBe(200);
    await waitFor(async () => (await b.core.jobs.get("m-b"))?.state === "done");
    b.crm.installed.ids = ["a", "c"];
    const fetchedBefore = tokenFetches(b).length;

    const [result] = await b.core.installs.sync();

    expect(result).toEqual({ company_id: COMPANY_ID, installed: 2, added: ["c"], marked_uninstalled: ["b"], failed: [] });
    expect(tokenFetches(b).slice(fetchedBefore)).toEqual(["c"]);
    expect(await b.core.tokens.get("c")).toMatchObject({ companyId: COMPANY_ID, approved: true, name: "Location c", uninstalledAt: 0 });
    expect(await b.core.tokens.get("a")).toMatchObject({ name: "Location a", uninstalledAt: 0 });
    expect(await b.core.tokens.get("b")).toMatchObject({ senderId: "KEEPME", uninstalledAt: expect.any(Number) });
    expect((await b.core.tokens.get("b"))!.uninstalledAt).toBeGreaterThan(0);
    expect(await b.core.jobs.get("m-b")).toBeDefined(); // its messages stay in the log
    expect(b.logs.join("")).toMatch(/sync of company company-1: 2 installed in HighLevel; 1 added, 1 marked uninstalled, 0 failed/);

    // Nothing changed since: a second run fetches no token and marks nothing.
    expect(await b.core.installs.sync()).toEqual([{ company_id: COMPANY_ID, installed: 2, added: [], marked_uninstalled: [], failed: [] }]);
    expect(tokenFetches(b).slice(fetchedBefore)).toEqual(["c"]);

    // Installed again in HighLevel: the next sync brings it back, settings kept.
    b.crm.installed.ids = ["a", "b", "c"];
    expect((await b.core.installs.sync())[0]?.added).toEqual(["b"]);
    expect(await b.core.tokens.get("b")).toMatchObject({ senderId: "KEEPME", uninstalledAt: 0 });
  });

  test("paced between token calls, and a 429 is waited out and retried", async () => {
    const paceMs = 40;
    const b = await start({ tuning: { bulkPaceMs: paceMs } });
    await agencyInstall(b, ["a"]);
    b.crm.installed.ids = ["a", "b", "c", "d"];
    const at: number[] = [];
    let refused = false;
    b.crm.on("POST /oauth/locationToken", (req) => {
      const { locationId } = fieldsOf(req) as { locationId: string };
      at.push(performance.now());
      if (locationId === "c" && !refused) {
        refused = true;
        return jsonResponse({ message: "Too many requests" }, 429, { "retry-after": "0" });
      }
      return jsonResponse({ access_token: `at-${locationId}`, refresh_token: `rt-${locationId}`, expires_in: 3600, locationId });
    });

    const [result] = await b.core.installs.sync();

    expect(result).toMatchObject({ added: ["b", "c", "d"], failed: [] });
    expect(tokenFetches(b).slice(-4)).toEqual(["b", "c", "c", "d"]);
    // Each location's turn (b, c, d) comes at least paceMs after the previous one;
    // c's retry waits out the 429 within its own turn.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(paceMs - 5);
    expect(at[3]! - at[1]!).toBeGreaterThanOrEqual(paceMs - 5);
  });

  test("a company HighLevel no longer accepts is reported, and nothing is marked on its account", async () => {
    const b = await start();
    await agencyInstall(b, ["a"]);
    b.crm.on("GET /oauth/installedLocations", () => jsonResponse({ message: "Invalid JWT" }, 401));
    const [result] = await b.core.installs.sync();
    expect(result).toMatchObject({ company_id: COMPANY_ID, error: expect.stringContaining("locations endpoint returned 401") });
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: 0 });
  });

  test("a stored company no longer in ALLOWED_COMPANY_IDS is not synced: nothing asked, nothing added", async () => {
    const b = await start({ env: { ALLOWED_COMPANY_IDS: "operatorCo" } });
    await b.core.companies.save({ companyId: COMPANY_ID, accessToken: "at", refreshToken: "rt", expiresAt: Date.now() + 86_400_000 }, Date.now());
    b.crm.installed.ids = ["a"];
    const [result] = await b.core.installs.sync();
    expect(result).toMatchObject({ error: expect.stringContaining("may not install this app") });
    expect(b.crm.requests).toEqual([]);
    expect(await b.core.tokens.list()).toEqual([]);
  });
});

describe("bridge locations sync", () => {
  test("--json prints each company's result; progress goes to stderr on a terminal only", async () => {
    const b = await start();
    await agencyInstall(b, ["a"]);
    b.crm.installed.ids = ["a", "b", "c"];

    const piped = await cli(b, ["locations", "sync", "--json"]);
    expect(piped).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(piped.stdout)).toEqual({
      companies: [{ company_id: COMPANY_ID, installed: 3, added: ["b", "c"], marked_uninstalled: [], failed: [] }],
    });

    b.crm.installed.ids = ["a", "b", "c", "d"];
    const onTerminal = await cli(b, ["locations", "sync"], true);
    expect(onTerminal.code).toBe(0);
    expect(onTerminal.stderr).toContain(`${COMPANY_ID}: location 1 of 1`);
    expect(onTerminal.stdout).toMatch(/^COMPANY\s+INSTALLED\s+ADDED\s+MARKED UNINSTALLED\s+FAILED\n/);
    expect(onTerminal.stdout).toMatch(new RegExp(`${COMPANY_ID}\\s+4\\s+d\\s+-\\s+-`));
  });

  test("a location that fails: named in the output, exit 1", async () => {
    const b = await start();
    await agencyInstall(b, ["a"]);
    b.crm.installed.ids = ["a", "b"];
    b.crm.on("POST /oauth/locationToken", () => jsonResponse({ message: "Forbidden" }, 403));
    const { code, stdout, stderr } = await cli(b, ["locations", "sync"]);
    expect(code).toBe(1);
    expect(stdout).toContain("b: locationToken endpoint returned 403");
    expect(stderr).toContain("sync incomplete: 1 failure(s)");
  });

  test("no company stored: says how to get one, exit 0", async () => {
    const b = await start();
    const { code, stdout } = await cli(b, ["locations", "sync"]);
    expect(code).toBe(0);
    expect(stdout).toContain("install the app from the agency");
  });
});
