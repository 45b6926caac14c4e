import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { assertBuilt, exited, startServe, type Serve } from "../helpers/binary.ts";
import { CLIENT_ID, outbound, signBody, waitFor } from "../helpers/bridge.ts";
import { startFakeCrm, type FakeCrm } from "../helpers/fake-crm.ts";
import { startFakeGateway, type FakeGateway } from "../helpers/fake-gateway.ts";

const keys = generateKeyPairSync("ed25519");
let dir: string;
let crm: FakeCrm;
let gateway: FakeGateway;
let env: Record<string, string>;
let server: Serve | undefined;

beforeAll(async () => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), "bridge-stop-"));
  crm = await startFakeCrm();
  gateway = await startFakeGateway();
  env = {
    BASE_URL: "http://bridge.test",
    CRM_CLIENT_ID: CLIENT_ID,
    CRM_CLIENT_SECRET: "stop-secret",
    CRM_API_URL: crm.url,
    CRM_WEBHOOK_PUBLIC_KEY: keys.publicKey.export({ type: "spki", format: "pem" }).toString(),
    SMS_API_URL: gateway.url,
    SMS_API_KEY: "stop-sms-key",
    DATABASE_PATH: join(dir, "bridge.db"),
    HOME: dir,
  };
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await crm?.close();
  await gateway?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("SIGTERM lets in-flight sends finish, keeps the rest queued for the next start, and exits 0", async () => {
  server = await startServe(env, dir);
  crm.grantLocation("code-stop", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-stop`)).status).toBe(200);
  // Each send takes 1.5 s, so SIGTERM finds a full set of sends in flight.
  gateway.on("POST /api/sms/send", async () => {
    await new Promise((r) => setTimeout(r, 1500));
    return gateway.accept();
  });
  const ids = Array.from({ length: 40 }, (_, i) => `stop-${i}`);
  for (const id of ids) {
    const raw = JSON.stringify(outbound(id));
    const res = await fetch(`${server.url}/webhooks/crm`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-ghl-signature": signBody(raw, keys.privateKey) },
      body: raw,
    });
    expect(res.status).toBe(200);
  }
  await waitFor(() => gateway.sent().length > 0);
  const inFlight = gateway.sent().length;

  const stopping = Date.now();
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  expect(Date.now() - stopping).toBeLessThan(10_000);
  // Every send that had started was finished and reported, none was cut off.
  expect(crm.statusReports().filter((r) => r.body.status === "delivered")).toHaveLength(gateway.sent().length);
  expect(gateway.sent().length).toBeGreaterThanOrEqual(inFlight);
  expect(gateway.sent().length).toBeLessThan(ids.length);

  // The rest was kept and goes out after the restart, each exactly once.
  gateway.on("POST /api/sms/send", () => gateway.accept());
  server = await startServe(env, dir);
  await waitFor(() => crm.statusReports().length === ids.length, 20_000);
  const texts = gateway.sent().map((s) => s.message);
  expect(new Set(texts).size).toBe(ids.length);
  expect(crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  server = undefined;
}, 60_000);
