import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { assertBuilt, exited, runBridge, startServe, type Serve } from "../helpers/binary.ts";
import { CLIENT_ID, outbound, signBody, waitFor } from "../helpers/bridge.ts";
import { startFakeCrm, type FakeCrm } from "../helpers/fake-crm.ts";
import { startFakeGateway, type FakeGateway } from "../helpers/fake-gateway.ts";

const ADMIN = "e2e-admin-key-0123456789";

let dir: string;
let crm: FakeCrm;
let gateway: FakeGateway;
let env: Record<string, string>;
let server: Serve;
let url: string;
const keys = generateKeyPairSync("ed25519");

function bridge(...args: string[]) {
  return runBridge(env, dir, args);
}

function webhook(body: unknown) {
  const raw = JSON.stringify(body);
  return fetch(`${url}/webhooks/crm`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-ghl-signature": signBody(raw, keys.privateKey) },
    body: raw,
  });
}

beforeAll(async () => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), "bridge-e2e-"));
  crm = await startFakeCrm();
  gateway = await startFakeGateway();
  env = {
    BASE_URL: "http://bridge.test",
    CRM_CLIENT_ID: CLIENT_ID,
    CRM_CLIENT_SECRET: "e2e-client-secret",
    CRM_API_URL: crm.url,
    CRM_WEBHOOK_PUBLIC_KEY: keys.publicKey.export({ type: "spki", format: "pem" }).toString(),
    SMS_API_URL: gateway.url,
    SMS_API_KEY: "e2e-global-sms-key",
    INBOUND_API_KEY: ADMIN,
    DATABASE_PATH: join(dir, "bridge.db"),
    HOME: dir,
  };
  server = await startServe(env, dir);
  url = server.url;
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await crm?.close();
  await gateway?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("dist/bridge, as an operator runs it", () => {
  test("serve answers /healthz and an install through /oauth-callback", async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    crm.grantLocation("code-e2e", "loc-1");
    const res = await fetch(`${url}/oauth-callback?code=code-e2e`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("You can close this tab");
    expect(statSync(env.DATABASE_PATH!).mode & 0o777).toBe(0o600);
  });

  test("locations list --json shows the location and never a token", async () => {
    const { code, stdout } = await bridge("locations", "list", "--json");
    expect(code).toBe(0);
    const { locations } = JSON.parse(stdout) as { locations: { location_id: string; company_id: string }[] };
    expect(locations).toMatchObject([{ location_id: "loc-1", company_id: "company-1", sender_id: "", sms_api_key: "" }]);
    expect(stdout).not.toMatch(/at-loc-1|rt-loc-1/);
  });

  test("config set takes effect on the running server's next message, without a restart", async () => {
    const set = await bridge("config", "set", "loc-1", "--sender-id", "BRIDGE", "--sms-api-key", "loc1-secret-api-key-xyz");
    expect(set.code).toBe(0);
    expect(set.stdout).not.toContain("loc1-secret-api-key-xyz");
    const got = await bridge("config", "get", "loc-1", "--json");
    expect(JSON.parse(got.stdout)).toEqual({ location_id: "loc-1", sender_id: "BRIDGE", sms_api_key: "loc1-secret-..." });

    expect((await webhook(outbound("e2e-1"))).status).toBe(200);
    await waitFor(() => crm.statusReports().some((r) => r.messageId === "e2e-1"));
    expect(gateway.sent().at(-1)).toEqual({ apiKey: "loc1-secret-api-key-xyz", to: "09171234567", message: "hello e2e-1", sender_id: "BRIDGE" });
  });

  test("token refresh spends the refresh token once, and the server then uses the new pair", async () => {
    const before = crm.received("POST /oauth/token").length;
    const { code, stdout } = await bridge("token", "refresh", "loc-1", "--force", "--json");
    expect(code).toBe(0);
    expect(JSON.parse(stdout).results).toMatchObject([{ location_id: "loc-1", status: "refreshed" }]);
    expect(crm.received("POST /oauth/token").length).toBe(before + 1);

    expect((await webhook(outbound("e2e-2"))).status).toBe(200);
    const report = await waitFor(() => crm.statusReports().find((r) => r.messageId === "e2e-2"));
    expect(report.authorization).not.toBe("Bearer at-loc-1-1");
    expect(report.authorization).toMatch(/^Bearer at-loc-1-\d+$/);
    expect(crm.received("POST /oauth/token").length).toBe(before + 1);
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
    [["no-such-command"], 2, "unknown command"],
    [["token", "refresh"], 2, "--all"],
  ])("bridge %j exits %i and says why on stderr", async (args, exit, message) => {
    const { code, stdout, stderr } = await bridge(...args);
    expect(code).toBe(exit);
    expect(stderr).toContain(message);
    expect(stdout).toBe("");
  });

  test("--help names the environment variables", async () => {
    const { code, stdout } = await bridge("--help");
    expect(code).toBe(0);
    for (const name of ["BASE_URL", "CRM_CLIENT_ID", "SMS_API_KEY", "INBOUND_API_KEY", "DATABASE_PATH"]) expect(stdout).toContain(name);
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
