import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { e2eSetup, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";

/**
 * An agency's locations over time, with dist/bridge as an operator runs it: an agency
 * install through a running serve, then `locations sync` and `locations remove` from
 * the command line on the same database. In order, like binary.test.ts.
 */

let e2e: E2E;
let server: Serve;

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

function listed(stdout: string) {
  return (JSON.parse(stdout) as { locations: { location_id: string; name: string; uninstalled_at: string | null }[] }).locations;
}

beforeAll(async () => {
  e2e = await e2eSetup("e2e-later");
  server = await startServe(e2e.env, e2e.dir);
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

describe("dist/bridge: locations an agency adds and removes later", () => {
  test("an agency install through serve connects its locations and keeps the company token", async () => {
    e2e.crm.installed.ids = ["loc-a", "loc-b"];
    e2e.crm.grantCompany("code-agency");
    const res = await fetch(`${server.url}/oauth-callback?code=code-agency`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("connected to 2 location(s) of 2");
  });

  test("locations sync adds a location installed since and marks one no longer installed", async () => {
    e2e.crm.installed.ids = ["loc-a", "loc-c"];
    const { code, stdout, stderr } = await bridge("locations", "sync", "--json");
    expect(code).toBe(0);
    // Not a terminal: no progress, only the log's diagnostics.
    expect(stderr).not.toMatch(/\r|location \d+ of \d+/);
    expect(stderr).toContain("sync of company company-1: 2 installed in HighLevel; 1 added, 1 marked uninstalled");
    expect(JSON.parse(stdout)).toEqual({
      companies: [{ company_id: COMPANY_ID, installed: 2, added: ["loc-c"], marked_uninstalled: ["loc-b"], failed: [] }],
    });

    const list = listed((await bridge("locations", "list", "--json")).stdout);
    expect(list.map((l) => [l.location_id, l.name, l.uninstalled_at === null])).toEqual([
      ["loc-a", "Location loc-a", true],
      ["loc-b", "Location loc-b", false],
      ["loc-c", "Location loc-c", true],
    ]);
    const table = (await bridge("locations", "list")).stdout;
    expect(table).toMatch(/^LOCATION\s+NAME\s+COMPANY/);
    expect(table).toMatch(/loc-b\s+Location loc-b\s.*\suninstalled\n/);
  });

  test("locations sync without the client secret: a clear configuration error, exit 1", async () => {
    const { CRM_CLIENT_SECRET: _secret, ...env } = e2e.env;
    const { code, stderr } = await runBridge(env, e2e.dir, ["locations", "sync"]);
    expect(code).toBe(1);
    expect(stderr).toContain("CRM_CLIENT_SECRET");
  });

  test("locations remove: exit 2 without --yes, then removes the record with it", async () => {
    const refused = await bridge("locations", "remove", "loc-b");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("this would remove location loc-b");
    expect(listed((await bridge("locations", "list", "--json")).stdout).map((l) => l.location_id)).toContain("loc-b");

    const removed = await bridge("locations", "remove", "loc-b", "--yes");
    expect(removed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^removed loc-b/) });
    expect(listed((await bridge("locations", "list", "--json")).stdout).map((l) => l.location_id)).toEqual(["loc-a", "loc-c"]);

    expect(await bridge("locations", "remove", "loc-b", "--yes")).toMatchObject({ code: 1, stderr: "bridge: location not found: loc-b\n" });
  });
});
