import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { waitFor } from "../helpers/bridge.ts";
import { startFakeWebhook } from "../helpers/fake-webhook.ts";

let e2e: E2E;
let webhook: Awaited<ReturnType<typeof startFakeWebhook>>;
let server: Serve | undefined;

beforeAll(async () => {
  webhook = await startFakeWebhook();
  // Any company may install, and its locations wait for approval: a condition from the start.
  e2e = await e2eSetup("alerts", { ALERT_WEBHOOK_URL: webhook.url, ALLOWED_COMPANY_IDS: "" });
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await webhook?.close();
  await e2e?.close();
});

/** `bridge status --json`'s alert channel, read by another process as an operator would. */
async function channel(): Promise<Record<string, unknown>> {
  const status = await runBridge(e2e.env, e2e.dir, ["status", "--json"]);
  return (JSON.parse(status.stdout) as { alerts: Record<string, unknown> }).alerts;
}

async function killed(serve: Serve): Promise<void> {
  serve.child.kill("SIGKILL");
  await exited(serve.child);
}

test("an alert the receiver refused survives kill -9 of dist/bridge and is delivered once by the next serve", async () => {
  const { crm, env, dir } = e2e;
  webhook.answer("noService");
  server = await startServe(env, dir);
  crm.grantLocation("code-alerts", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-alerts`)).status).toBe(200);
  await killed(server);

  // This serve's first look finds loc-1 waiting for approval; the receiver refuses the alert.
  server = await startServe(env, dir);
  await waitFor(() => webhook.requests.length >= 1, 10_000);
  let alerts = await channel();
  for (const end = Date.now() + 10_000; alerts.last_error === null && Date.now() < end; ) alerts = await channel();
  await killed(server);
  expect(alerts).toMatchObject({ configured: true, waiting: 1, last_delivered_at: null });
  expect(alerts.last_error).toMatch(/answered 404: no_service$/);
  expect(webhook.delivered).toEqual([]);

  webhook.answer("ok");
  server = await startServe(env, dir);
  await waitFor(() => webhook.delivered.length === 1, 10_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(webhook.delivered).toEqual([
    "bridge (bridge.test): Location loc-1 waiting for approval: pending: not approved to use SMS_API_KEY and has no key of its own. Approve it once you know whose it is: `bridge locations approve loc-1`.",
  ]);
  expect(server.log).not.toContain("secret-webhook-token");
});
