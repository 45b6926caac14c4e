import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { e2eSetup, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

/** `bridge optouts` of the built binary beside a running serve (docs/cli.md, "Opt-outs"). In order. */

let e2e: E2E;
let server: Serve;

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

/** Sends one message through serve; what HighLevel was told of it. */
async function deliver(messageId: string) {
  expect((await e2e.webhook(server.url, outbound(messageId))).status).toBe(200);
  const reports = await waitFor(() => {
    const found = e2e.crm.statusReports().filter((r) => r.messageId === messageId);
    return found.length > 0 && found;
  }, 10_000);
  return reports.map((r) => r.body);
}

beforeAll(async () => {
  e2e = await e2eSetup("optouts");
  server = await startServe(e2e.env, e2e.dir);
  e2e.crm.grantLocation("code-o", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-o`)).status).toBe(200);
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

describe("dist/bridge optouts", () => {
  test("add: serve sends nothing to the number and tells HighLevel 'recipient opted out'", async () => {
    const added = await bridge("optouts", "add", "loc-1", "09171234567");
    expect(added).toMatchObject({ code: 0, stdout: "0917***4567 added to the opt-out list of location loc-1\n" });

    expect(await deliver("m-1")).toEqual([{ status: "failed", error: { code: "opted_out", type: "saas", message: "recipient opted out" } }]);
    expect(e2e.gateway.calls()).toEqual([]);
  });

  test("list: masked in the table and in --json", async () => {
    const table = await bridge("optouts", "list", "loc-1");
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^PHONE\s+BY\s+SINCE\n0917\*\*\*4567\s+operator\s+\d{4}-/);
    const json = await bridge("optouts", "list", "loc-1", "--json");
    expect(JSON.parse(json.stdout)).toEqual({ location_id: "loc-1", opt_outs: [{ phone: "0917***4567", by: "operator", opted_out_at: expect.any(String) }] });
    expect(table.stdout + json.stdout).not.toContain("9171234567");
  });

  test("a number that is not a Philippine mobile: exit 2, nothing changed", async () => {
    const { code, stderr } = await bridge("optouts", "remove", "loc-1", "+14155550100");
    expect(code).toBe(2);
    expect(stderr).toContain("not a Philippine mobile number: +141***0100");
    expect(JSON.parse((await bridge("optouts", "list", "loc-1", "--json")).stdout).opt_outs).toHaveLength(1);
  });

  test("remove: the next message goes", async () => {
    const removed = await bridge("optouts", "remove", "loc-1", "+639171234567");
    expect(removed).toMatchObject({ code: 0, stdout: "0917***4567 removed from the opt-out list of location loc-1\n" });
    expect(await deliver("m-2")).toEqual([{ status: "delivered" }]);
    expect(e2e.gateway.sent()).toMatchObject([{ to: "09171234567", message: "hello m-2" }]);
  });
});
