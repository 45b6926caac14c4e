import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { BALANCE, SEND } from "../helpers/fake-gateway.ts";
import { runCli } from "../helpers/cli.ts";
import { jsonResponse } from "../helpers/http.ts";

/** GET /api/admin/status (docs/http.md, "Endpoints"), and the balance warning (LOW_BALANCE_CREDITS). */

const start = bridgePerTest();

async function status(bridge: Bridge) {
  const res = await bridge.admin("/api/admin/status");
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
}

test("the queue by status, each location's backlog with its oldest message, and a held key with its reason", async () => {
  const bridge = await start({ tuning: { holdProbeMs: 60_000 } }, "loc-1", "loc-2");
  await bridge.core.tokens.setConfig("loc-2", { smsApiKey: "loc2-own-key-0123456789" }, Date.now());
  bridge.gateway.on(SEND, (req) =>
    req.headers["x-api-key"] === "loc2-own-key-0123456789"
      ? jsonResponse({ success: false, error: "API key revoked", error_code: "API_KEY_REVOKED" }, 403)
      : bridge.gateway.accept(),
  );
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 5000);
  for (const id of ["m-2", "m-3"]) expect((await bridge.webhook(outbound(id, { locationId: "loc-2" }))).status).toBe(200);
  await waitFor(async () => (await Promise.all(["m-2", "m-3"].map((id) => bridge.core.messages.get(id)))).every((found) => found?.status === "held"), 5000);

  const view = await status(bridge);

  expect(view.queue).toEqual({ queued: 0, held: 2, sending: 0, on_phone: 0, sent: 0, delivered: 1, failed: 0 });
  expect(view.backlog).toEqual([
    { location_id: "loc-2", waiting: 2, oldest_received_at: expect.any(String), oldest_wait_seconds: expect.any(Number) },
  ]);
  expect(view.held_keys).toEqual([{ key: "loc2-own-key...", status: 403, reason: expect.stringContaining("API key revoked"), since: expect.any(String) }]);
  expect(JSON.stringify(view)).not.toContain("loc2-own-key-0123456789");
});

test("locations that need attention: uninstalled, refused refresh token, pending without a key", async () => {
  const bridge = await start({}, "loc-ok", "loc-gone", "loc-stale");
  await bridge.core.tokens.markUninstalled("loc-gone", Date.now());
  const stale = (await bridge.core.tokens.get("loc-stale"))!;
  expect(await bridge.core.tokens.tryLease("loc-stale", stale.serial, Date.now(), Date.now() + 1000)).toBe(true);
  await bridge.core.tokens.releaseLease("loc-stale", stale.serial, "token endpoint returned 400: invalid_grant");
  await bridge.core.tokens.save({ locationId: "loc-new", companyId: "other", accessToken: "a", refreshToken: "r", expiresAt: Date.now() + 3_600_000 }, Date.now(), false);

  const view = await status(bridge);

  expect(view.needs_attention).toEqual([
    { location_id: "loc-gone", reason: expect.stringMatching(/^uninstalled at .*: reinstall the app to send again$/) },
    { location_id: "loc-new", reason: "pending: not approved to use SMS_API_KEY and has no key of its own" },
    { location_id: "loc-stale", reason: "needs a reinstall: token endpoint returned 400: invalid_grant" },
  ]);
});

test("balances: read for every key in use, shown low below LOW_BALANCE_CREDITS, warned at most hourly", async () => {
  // Without serve's balance reading at start: the reads counted below are these refreshes'.
  const bridge = await start({ env: { LOW_BALANCE_CREDITS: "100" }, balances: false }, "loc-1", "loc-2");
  await bridge.core.tokens.setConfig("loc-2", { smsApiKey: "loc2-own-key-0123456789" }, Date.now());
  bridge.gateway.on(BALANCE, (req) => jsonResponse({ success: true, credits: req.headers["x-api-key"] === "loc2-own-key-0123456789" ? 40 : 900, currency: "PHP" }));
  const keys = [bridge.env.SMS_API_KEY!, "loc2-own-key-0123456789"];

  await bridge.core.operator.balances.refresh(keys);
  await bridge.core.operator.balances.refresh(keys); // fresh: not read again

  expect(bridge.gateway.received(BALANCE)).toHaveLength(2);
  const { balances } = await status(bridge);
  expect(balances).toEqual(
    expect.arrayContaining([
      { key: "global-sms-k...", credits: 900, checked_at: expect.any(String), low: false, error: null },
      { key: "loc2-own-key...", credits: 40, checked_at: expect.any(String), low: true, error: null },
    ]),
  );
  const warnings = bridge.logs.filter((l) => l.includes("[warn] SMS gateway key loc2-own-key... has 40 credits left, below LOW_BALANCE_CREDITS (100)"));
  expect(warnings).toHaveLength(1);
});

test("a started bridge reads the balance of each key in use at once, as serve does", async () => {
  const bridge = await start();

  await waitFor(async () => (await bridge.core.gatewayKeys.list()).some((key) => key.balanceAt !== null));
  expect(bridge.gateway.received(BALANCE).map((r) => r.headers["x-api-key"])).toEqual([bridge.env.SMS_API_KEY]);
  const { balances } = await status(bridge);
  expect(balances).toEqual([{ key: "global-sms-k...", credits: expect.any(Number), checked_at: expect.any(String), low: false, error: null }]);
});

test("a balance that cannot be read is shown with the reason, not as a number", async () => {
  // Without serve's reading at start, which could record a balance first and make this refresh's read needless.
  const bridge = await start({ balances: false }, "loc-1");
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: false, error: "Invalid API key", error_code: "INVALID_API_KEY" }, 401));
  await bridge.core.operator.balances.refresh([bridge.env.SMS_API_KEY!]);
  const { balances } = await status(bridge);
  expect(balances).toEqual([{ key: "global-sms-k...", credits: null, checked_at: expect.any(String), low: false, error: expect.stringContaining("401") }]);
});

test("opt-outs: the numbers on the locations' lists, by who put them there", async () => {
  const bridge = await start({}, "loc-1", "loc-2");
  expect((await status(bridge)).opt_outs).toEqual({ reply: 0, operator: 0, page: 0 });
  await bridge.core.optOutList.add("loc-1", "+639171234567", "reply");
  await bridge.core.optOutList.add("loc-2", "+639171234567", "reply");
  await bridge.core.optOutList.add("loc-1", "+639181234567", "operator");
  expect((await status(bridge)).opt_outs).toEqual({ reply: 2, operator: 1, page: 0 });
});

test("a Cast outage in progress: status, the admin API's and the CLI's, names it, since when, why, and what waits on it", async () => {
  const b = await start({ env: { DLR_WAIT: "0" }, tuning: { sendBackoffMs: 10 } }, "loc-1");
  b.gateway.on(SEND, () => jsonResponse({ success: false, error: "maintenance" }, 503));
  for (const id of ["m-1", "m-2", "m-3"]) expect((await b.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => b.core.operator.outages.list()[0]?.failedCalls! >= 2);

  const outage = {
    remote: "cast",
    name: "Cast.ph",
    since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    for_seconds: expect.any(Number),
    kind: "http",
    reason: "send answered 503",
    failed_calls: expect.any(Number),
    last_failed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    waiting_messages: 3,
  };
  expect((await status(b)).outages).toEqual([outage]);
  // bridge status is another process: it reads what serve recorded in the database.
  const json = await runCli(b, "status", "--json");
  expect(JSON.parse(json.stdout).outages).toEqual([outage]);
  const text = await runCli(b, "status");
  expect(text.stdout).toContain("outages in progress (their messages wait):\n");
  expect(text.stdout).toMatch(/\nCast\.ph unreachable +\S+ +\d+ s +3 +\S+ +http: send answered 503\n/);

  b.gateway.on(SEND, () => b.gateway.accept());
  await waitFor(() => b.crm.statusReports().length === 3);
  expect((await status(b)).outages).toEqual([]);
  expect((await runCli(b, "status")).stdout).toContain("outages in progress (their messages wait): none\n");
});

test("an outage a stopped serve recorded is cleared when serve starts again", async () => {
  const b = await start({ worker: false }, "loc-1");
  await b.core.outageRecords.save({ remote: "crm", since: 1, kind: "timeout", reason: "stale", failedCalls: 9, lastFailedAt: 2 });
  expect((await status(b)).outages).toHaveLength(1);
  await b.close();
  const again = await start({ worker: false, env: { DATABASE_PATH: b.env.DATABASE_PATH! } });
  expect((await status(again)).outages).toEqual([]);
});

test("a key held for a 402 shows its balance read since the hold, not the credits it had before", async () => {
  const bridge = await start({ balances: false, tuning: { holdProbeMs: 60_000 } }, "loc-1");
  let credits = 900;
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits, currency: "PHP" }));
  await bridge.core.operator.balances.refresh([bridge.env.SMS_API_KEY!]);
  bridge.gateway.on(SEND, () => jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402));
  credits = 0;
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.messages.get("m-1"))?.status === "held");

  // Within the 5 minutes a balance stays fresh, yet read again: the key was held since.
  const { stdout } = await runCli(bridge, "status", "--json");
  expect(JSON.parse(stdout).balances).toEqual([{ key: "global-sms-k...", credits: 0, checked_at: expect.any(String), low: true, error: null }]);
  expect(bridge.gateway.received(BALANCE)).toHaveLength(2);
});

test("status lists the servers on the database with their heartbeat's age, and who holds the leader's lease", async () => {
  const first = await start({ balances: false, sync: false });
  const second = await start({ balances: false, sync: false, env: { DATABASE_PATH: first.env.DATABASE_PATH! } });
  const view = await status(second);
  expect(view.servers.map((s: { id: string }) => s.id)).toEqual([first.presence.id, second.presence.id]);
  expect(view.servers[0]).toEqual({ id: first.presence.id, address: expect.any(String), started_at: expect.stringMatching(/^\d{4}-/), heartbeat_age_seconds: expect.any(Number) });
  expect(view.servers[0].heartbeat_age_seconds).toBeLessThan(10);
  expect(view.leases).toEqual([{ name: "leader", holder: first.presence.id, until: expect.stringMatching(/^\d{4}-/), epoch: 1 }]);
  const json = JSON.parse((await runCli(second, "status", "--json")).stdout);
  expect(json.servers.map((s: { id: string }) => s.id)).toEqual([first.presence.id, second.presence.id]);
  expect(json.leases.map((l: { holder: string }) => l.holder)).toEqual([first.presence.id]);
  const text = (await runCli(second, "status")).stdout;
  expect(text).toMatch(new RegExp(`servers:\\nSERVER +ADDRESS +STARTED +LAST HEARTBEAT\\n${first.presence.id} +\\S+ +\\S+ +\\d+ s ago\\n${second.presence.id} `));
  expect(text).toMatch(new RegExp(`leases held:\\nLEASE +HOLDER +UNTIL\\nleader +${first.presence.id} +\\S+\\n`));
  await first.close();
  await second.close();
  expect((await runCli(second, "status")).stdout).toContain("servers: none\n\nleases held: none\n");
});
