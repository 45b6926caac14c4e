import { afterEach, expect, test } from "vitest";
import { routeInbound } from "../../src/core/inbound/operator.ts";
import { ADMIN_KEY, CLIENT_SECRET, GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type BridgeOptions } from "../helpers/bridge.ts";
import { runCli } from "../helpers/cli.ts";
import { BALANCE, SEND } from "../helpers/fake-gateway.ts";
import { startFakeWebhook } from "../helpers/fake-webhook.ts";
import { jsonResponse } from "../helpers/http.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { keyTag } from "../../src/core/key-tag.ts";

/** Alerts to a person through ALERT_WEBHOOK_URL (docs/alerts.md), to a fake Slack-style receiver. */

const startBridge = bridgePerTest();
const receivers: Awaited<ReturnType<typeof startFakeWebhook>>[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

/** A bridge whose clock the test moves (`clock.skew`), alerting to a fresh fake receiver. */
async function start(options: BridgeOptions = {}, receiver?: Awaited<ReturnType<typeof startFakeWebhook>>) {
  const webhook = receiver ?? (await startFakeWebhook());
  if (!receiver) receivers.push(webhook);
  const clock = { skew: 0 };
  const env = { ALERT_WEBHOOK_URL: webhook.url, ...options.env };
  const tuning = { alertBackoffMs: 50, alertWarmUpMs: 0, ...options.tuning };
  // No balance read at start: it would race the test's own, which decides the balance.
  const bridge = await startBridge({ now: () => Date.now() + clock.skew, balances: false, ...options, tuning, env }, "loc-1");
  return { bridge, webhook, clock };
}

/** What no alert may ever carry: a key, a secret, the webhook's own token, a phone number. */
function expectNoSecret(texts: string[]): void {
  for (const secret of [GLOBAL_SMS_KEY, CLIENT_SECRET, ADMIN_KEY, "secret-webhook-token", "+639171234567", "9171234567"]) {
    for (const text of texts) expect(text).not.toContain(secret);
  }
}

test("a Cast outage is alerted once after its minute of grace, and its end once", async () => {
  const { bridge, webhook, clock } = await start({ balances: false });
  // Cast's balance call, the only call made here: the outages observe every call alike.
  let down = true;
  bridge.gateway.on(BALANCE, () => (down ? jsonResponse({ success: false, error: "unavailable" }, 503) : jsonResponse({ success: true, credits: 1000, currency: "PHP" })));
  await expect(bridge.core.clients.cast.balance(GLOBAL_SMS_KEY)).rejects.toThrow();
  expect(bridge.core.operator.outages.list()).toHaveLength(1);

  await bridge.core.alerts.look();
  clock.skew += 30_000;
  await bridge.core.alerts.look();
  await new Promise((r) => setTimeout(r, 100));
  expect(webhook.delivered).toEqual([]); // a blip of under a minute needs no one

  clock.skew += 31_000;
  await bridge.core.alerts.look();
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  expect(webhook.delivered[0]).toMatch(/^bridge \(bridge\.test\): Cast\.ph unreachable \(http: .*\): sends wait\. `bridge status` shows the outage/);

  down = false;
  await bridge.core.clients.cast.balance(GLOBAL_SMS_KEY);
  expect(bridge.core.operator.outages.list()).toEqual([]);
  await bridge.core.alerts.look();
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/^bridge \(bridge\.test\): resolved after 1 min \d+ s: Cast\.ph unreachable\.$/);
  await new Promise((r) => setTimeout(r, 100));
  expect(webhook.requests).toHaveLength(2);
  expectNoSecret(webhook.delivered);
});

test("a key held for no credit is alerted with why and what to do, and cleared once it works again", async () => {
  const { bridge, webhook } = await start({ balances: false });
  let credits = 0;
  bridge.gateway.on(SEND, () =>
    credits > 0 ? bridge.gateway.accept() : jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402),
  );
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.gatewayKeys.list()).some((k) => k.heldSince !== null));

  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  const [started = ""] = webhook.delivered;
  expect(started).toMatch(/Cast key [0-9a-f]{16} on hold \(no credit\): Cast refused it/);
  expect(started).toContain("SMS_API_KEY (the default key)");
  expect(started).toContain("`bridge config set LOCATION --sms-api-key -`");

  credits = 500;
  await waitFor(() => bridge.crm.statusReports().length === 1, 10_000);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/resolved after \d+ s: Cast key [0-9a-f]{16} on hold \(no credit\)\.$/);
  expectNoSecret(webhook.delivered);
});

test("a low balance is said again at most once an hour while it lasts, and not while its last alert waits", async () => {
  const { bridge, webhook, clock } = await start({ env: { LOW_BALANCE_CREDITS: "500" } });
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 120, currency: "PHP" }));
  await bridge.core.operator.balances.refresh([GLOBAL_SMS_KEY]);

  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  expect(webhook.delivered[0]).toMatch(/Cast key [0-9a-f]{16} low on credit: 120 credits left, below LOW_BALANCE_CREDITS \(500\)/);
  for (const minutes of [1, 30, 59]) {
    clock.skew = minutes * 60_000;
    await bridge.core.alerts.look();
  }
  clock.skew = 61 * 60_000;
  await bridge.core.alerts.look();
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/: still, for 1 h 1 min: Cast key [0-9a-f]{16} low on credit: 120 credits/);

  webhook.answer("rollupError"); // the next reminder cannot go: none is queued behind it
  clock.skew = 122 * 60_000;
  await bridge.core.alerts.look();
  await waitFor(() => webhook.requests.length >= 4);
  clock.skew = 183 * 60_000;
  await bridge.core.alerts.look();
  expect((await bridge.core.alertStore.health()).waiting).toBe(1);
  await new Promise((r) => setTimeout(r, 100));
  expect(webhook.delivered).toHaveLength(2);
});

test("an alert waits out the receiver's outage, shown in status, and is delivered once when it answers", async () => {
  const { bridge, webhook } = await start({ env: { LOW_BALANCE_CREDITS: "500" } });
  webhook.answer("rollupError");
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 10, currency: "PHP" }));
  await bridge.core.operator.balances.refresh([GLOBAL_SMS_KEY]);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.requests.length >= 3, 5_000); // 50 ms doubling

  const status = await runCli(bridge, "status", "--json");
  const alerts = (JSON.parse(status.stdout) as { alerts: Record<string, unknown> }).alerts;
  expect(alerts).toMatchObject({ configured: true, to: new URL(webhook.url).host, waiting: 1, last_delivered_at: null });
  expect(alerts.last_error).toMatch(/^127\.0\.0\.1:\d+ answered 500: rollup_error$/);
  expect(status.stdout).not.toContain("secret-webhook-token");

  webhook.answer("ok");
  await waitFor(() => webhook.delivered.length === 1, 5_000);
  await new Promise((r) => setTimeout(r, 200));
  expect(webhook.delivered).toHaveLength(1);
  expect(await bridge.core.alertStore.health()).toMatchObject({ waiting: 0, lastError: null });
  expect((await runCli(bridge, "status")).stdout).toMatch(/^alerts: to 127\.0\.0\.1:\d+: 0 waiting, last delivered \d{4}-/m);
});

test("an alert recorded while the receiver is down survives a restart of bridge and is delivered once by the next", async () => {
  const webhook = await startFakeWebhook();
  receivers.push(webhook);
  webhook.answer("noService");
  const { bridge: first } = await start({ env: { LOW_BALANCE_CREDITS: "500" } }, webhook);
  first.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 10, currency: "PHP" }));
  await first.core.operator.balances.refresh([GLOBAL_SMS_KEY]);
  await first.core.alerts.look();
  await waitFor(() => webhook.requests.length >= 1);
  await first.close();

  webhook.answer("ok");
  const { bridge: second } = await start({ env: { LOW_BALANCE_CREDITS: "500", DATABASE_PATH: first.env.DATABASE_PATH ?? "" } }, webhook);
  second.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 10, currency: "PHP" }));
  await second.core.alerts.look(); // the condition still holds: no second "started"
  await waitFor(() => webhook.delivered.length === 1, 5_000);
  await new Promise((r) => setTimeout(r, 200));
  expect(webhook.delivered).toHaveLength(1);
  expect(webhook.delivered[0]).toContain("low on credit: 10 credits left");
});

test("a webhook that hangs never holds a send: messages go while the alert waits", async () => {
  const { bridge, webhook } = await start({ env: { LOW_BALANCE_CREDITS: "500" } });
  webhook.answer("hang");
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 10, currency: "PHP" }));
  await bridge.core.operator.balances.refresh([GLOBAL_SMS_KEY]);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.requests.length === 1);

  const sentAt = Date.now();
  for (const id of ["m-1", "m-2", "m-3"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().length === 3, 5_000);
  expect(Date.now() - sentAt).toBeLessThan(3_000);
  expect((await bridge.core.alertStore.health()).waiting).toBe(1);
});

test("a 429 from the receiver is waited out for its Retry-After before the alert is posted again", async () => {
  const { bridge, webhook } = await start({ env: { LOW_BALANCE_CREDITS: "500" } });
  webhook.answer("rateLimited", "2");
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 10, currency: "PHP" }));
  await bridge.core.operator.balances.refresh([GLOBAL_SMS_KEY]);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.requests.length === 1);
  const refusedAt = Date.now();
  webhook.answer("ok");
  await waitFor(() => webhook.delivered.length === 1, 5_000);
  expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(1_900);
});

sqliteOnly("SQLite's PRAGMA query_only makes the database refuse writes")("a database that refuses writes is alerted from memory, and its end once it takes them again", async () => {
  const { bridge, webhook } = await start({ balances: false });
  bridge.core.db.pragma("query_only = ON"); // SQLite refuses every write: SQLITE_READONLY
  expect((await bridge.webhook(outbound("m-1"))).status).not.toBe(200); // HighLevel is asked to try again
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  expect(webhook.delivered[0]).toMatch(/The database refuses writes \(.*readonly.*\): new messages are refused and sends wait\. Free disk space/);

  bridge.core.db.pragma("query_only = OFF");
  expect((await bridge.webhook(outbound("m-2"))).status).toBe(200);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/resolved after \d+ s: the database refuses writes\.$/);
});

test("a location waiting for approval and unrouted replies are each alerted with the command that helps", async () => {
  const { bridge, webhook } = await start({ balances: false, env: { CRM_PROVIDER_ID: "provider-1" } });
  await bridge.core.tokens.setApproved("loc-1", false, Date.now());
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  expect(webhook.delivered[0]).toContain("Location loc-1 waiting for approval: pending: not approved to use SMS_API_KEY and has no key of its own. Approve it once you know whose it is: `bridge locations approve loc-1`.");

  await bridge.core.tokens.setApproved("loc-1", true, Date.now());
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/resolved after \d+ s: location loc-1 waiting for approval\.$/);

  const reply = await bridge.admin("/api/inbound", { method: "POST", body: JSON.stringify({ from: "+639171234567", text: "who is this?" }) });
  const { id } = (await reply.json()) as { id: string };
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 3);
  expect(webhook.delivered[2]).toContain(
    "1 reply could not be routed to a location and waits. List them with `bridge messages list --status unrouted`, then `bridge messages route ID LOCATION` posts each to HighLevel.",
  );
  await routeInbound(bridge.core.replies, id, "loc-1", Date.now());
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 4);
  expect(webhook.delivered[3]).toMatch(/resolved after \d+ s: unrouted replies\.$/);
  expectNoSecret(webhook.delivered);
});

test("bridge alerts test posts one alert and says so; a webhook that refuses it exits 1 naming its answer", async () => {
  const { bridge, webhook } = await start({ balances: false });
  const sent = await runCli(bridge, "alerts", "test");
  expect(sent).toMatchObject({ code: 0, stderr: "" });
  expect(sent.stdout).toBe("sent: bridge (bridge.test): a test alert (`bridge alerts test`): alerts reach this channel.\n");
  expect(webhook.delivered).toHaveLength(1);
  expect(JSON.parse(webhook.requests[0]?.body ?? "")).toEqual({ text: webhook.delivered[0] });
  expect(webhook.requests[0]?.headers["content-type"]).toBe("application/json");

  webhook.answer("noService");
  const refused = await runCli(bridge, "alerts", "test");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/the webhook did not take the test alert: 127\.0\.0\.1:\d+ answered 404: no_service/);
  expect(refused.stderr).not.toContain("secret-webhook-token");

  const unset = await runCli({ env: { ...bridge.env, ALERT_WEBHOOK_URL: "" } }, "alerts", "test");
  expect(unset.code).toBe(2);
  expect(unset.stderr).toContain("ALERT_WEBHOOK_URL is not set");
});

test("a key held before a restart is not said resolved by the next serve before it could find out again", async () => {
  const webhook = await startFakeWebhook();
  receivers.push(webhook);
  const { bridge: first } = await start({ balances: false }, webhook);
  first.gateway.on(SEND, () => jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402));
  expect((await first.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await first.core.gatewayKeys.list()).some((k) => k.heldSince !== null));
  await first.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  await first.close();

  // serve's own warm-up: holds live in memory, so the new process knows of none yet.
  const { bridge: second, clock } = await start({ balances: false, worker: false, tuning: { alertWarmUpMs: undefined }, env: { DATABASE_PATH: first.env.DATABASE_PATH ?? "" } }, webhook);
  await second.core.alerts.look();
  clock.skew = 2 * 60_000;
  await second.core.alerts.look();
  await new Promise((r) => setTimeout(r, 200));
  expect(webhook.delivered).toHaveLength(1);
  clock.skew = 3 * 60_000;
  await second.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/resolved after 3 min \d+ s: Cast key [0-9a-f]{16} on hold \(no credit\)\.$/);
});

test("a location at 80 % and at 100 % of its monthly cap is alerted once each, and both end when the cap is raised", async () => {
  const { bridge, webhook } = await start({ balances: false });
  expect((await runCli(bridge, "config", "set", "loc-1", "--monthly-cap", "5")).code).toBe(0);
  for (const id of ["c-1", "c-2", "c-3", "c-4"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.gateway.sent().length === 4);
  await bridge.core.alerts.look();
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 1);
  expect(webhook.delivered[0]).toMatch(/Location loc-1 at 80 % of its monthly cap: 4 of 5 SMS parts used; .*`bridge config set loc-1 --monthly-cap PARTS`/);

  expect((await bridge.webhook(outbound("c-5"))).status).toBe(200);
  await waitFor(() => bridge.gateway.sent().length === 5);
  await bridge.core.alerts.look();
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 2);
  expect(webhook.delivered[1]).toMatch(/Location loc-1 reached its monthly cap of 5 SMS parts/);

  expect((await runCli(bridge, "config", "set", "loc-1", "--monthly-cap", "100")).code).toBe(0);
  await bridge.core.alerts.look();
  await waitFor(() => webhook.delivered.length === 4);
  expect(webhook.delivered.slice(2).sort()).toEqual([
    expect.stringMatching(/resolved after .*: location loc-1 at 80 % of its monthly cap\.$/),
    expect.stringMatching(/resolved after .*: location loc-1 reached its monthly cap\.$/),
  ].sort());
  await new Promise((r) => setTimeout(r, 100));
  expect(webhook.delivered).toHaveLength(4);
});

test("two servers on one database: only the leader looks for what needs a person and posts it, then the next leader", async () => {
  const { bridge: first, webhook } = await start({ alertEveryMs: 30, beatMs: 50 });
  const { bridge: second } = await start({ alertEveryMs: 30, beatMs: 50, env: { DATABASE_PATH: first.config.databasePath } }, webhook);
  expect(second.presence.leads()).toBe(false);
  const looks = { first: 0, second: 0 };
  first.core.alerts.addSource(() => (looks.first++, []));
  second.core.alerts.addSource(() => (looks.second++, []));
  await first.core.gatewayKeys.held(keyTag(GLOBAL_SMS_KEY), "ab…", { since: Date.now(), status: 401, reason: "key refused" });
  await waitFor(() => webhook.delivered.length === 1);
  await new Promise((r) => setTimeout(r, 300));
  expect(webhook.posted()).toHaveLength(1);
  expect(webhook.delivered[0]).toMatch(/on hold/);
  expect(looks.first).toBeGreaterThan(2);
  expect(looks.second).toBe(0);

  // The leader stops: the other leads and carries on from the alerts the database keeps (no second start).
  await first.close();
  await waitFor(() => second.presence.leads(), 3000);
  await second.core.gatewayKeys.released(keyTag(GLOBAL_SMS_KEY));
  await waitFor(() => webhook.delivered.length === 2, 5000);
  expect(webhook.delivered[1]).toMatch(/resolved/);
  expect(looks.second).toBeGreaterThan(0);
});
