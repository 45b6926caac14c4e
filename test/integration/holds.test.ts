import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type BridgeOptions } from "../helpers/bridge.ts";
import { BALANCE, castError, SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";
import { GatewayError } from "../../src/errors.ts";

/** Account problems hold a key's messages; they don't burn the queue (docs/architecture.md, "Holds"). */

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith(options, "loc-1");

const OUT_OF_CREDIT = () => jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402);

test("out of credit (402): the key's messages wait, the operator is told once, and they go once a probe send passes", async () => {
  // Without serve's balance reading at start: no GET below then comes from the holds.
  const bridge = await start({ balances: false });
  let credits = 0;
  const accepted: string[] = [];
  bridge.gateway.on(SEND, (req) => {
    if (credits <= 0) return OUT_OF_CREDIT();
    accepted.push((JSON.parse(req.body) as { message: string }).message);
    return bridge.gateway.accept();
  });

  for (const id of ["m-1", "m-2", "m-3"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.gateway.calls().length >= 3, 5_000); // the first refusal, then probes: one message each
  expect(bridge.crm.statusReports()).toEqual([]); // waiting, not failed
  expect(bridge.gateway.received(BALANCE)).toEqual([]); // a balance does not say whether a send will go
  const log = bridge.logs.join("");
  expect(log.match(/SMS gateway refused key global-sms-k\.\.\. \(gateway rejected the message \(402\): Insufficient credits\): its messages wait/g)).toHaveLength(1);
  expect(log).not.toContain(GLOBAL_SMS_KEY);

  credits = 500;
  await waitFor(() => bridge.crm.statusReports().length === 3, 10_000);
  expect(bridge.crm.statusReports().map((r) => r.body.status)).toEqual(["delivered", "delivered", "delivered"]);
  expect(accepted.toSorted()).toEqual(["hello m-1", "hello m-2", "hello m-3"]);
  expect(bridge.logs.join("")).toMatch(/SMS gateway key global-sms-k\.\.\. works again after \d+ s: its messages go out now/);
});

test("a postpaid account at its credit limit (402 CREDIT_LIMIT_REACHED, balance below 0): its messages go once the limit is raised", async () => {
  const bridge = await start();
  let limitReached = true;
  const atLimit = () => jsonResponse({ success: false, error: "credit limit reached", error_code: "CREDIT_LIMIT_REACHED" }, 402);
  bridge.gateway.on(SEND, () => (limitReached ? atLimit() : bridge.gateway.accept()));
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: -1500, currency: "PHP" })); // postpaid: below 0 in normal use

  for (const id of ["m-1", "m-2"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.gateway.calls().length >= 2, 5_000);
  expect(bridge.crm.statusReports()).toEqual([]);
  limitReached = false;

  await waitFor(() => bridge.crm.statusReports().length === 2, 10_000);
  expect(bridge.crm.statusReports().map((r) => r.body.status)).toEqual(["delivered", "delivered"]);
});

test.each([
  { code: "CHANNEL_NOT_ALLOWED", error: "channel not allowed" },
  { code: "IP_NOT_WHITELISTED", error: "IP not whitelisted" },
])("a key refused with $code stays held while its balance call works: no flapping, one line for the operator", async ({ code, error }) => {
  const bridge = await start();
  bridge.gateway.on(SEND, () => jsonResponse({ success: false, error, error_code: code }, 403));

  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => bridge.gateway.calls().length >= 4, 5_000); // the refusal, then probes

  const log = bridge.logs.join("");
  expect(log.match(/SMS gateway refused key/g)).toHaveLength(1);
  expect(log).not.toContain("works again");
  expect(bridge.crm.statusReports()).toEqual([]);
});

test("a revoked key (403) held longer than SMS_HOLD_MAX: its messages are reported failed with the reason", async () => {
  const bridge = await start({ env: { SMS_HOLD_MAX: "1s" } });
  const revoked = () => jsonResponse({ success: false, error: "API key revoked", error_code: "API_KEY_REVOKED" }, 403);
  bridge.gateway.on(SEND, revoked);
  bridge.gateway.on(BALANCE, revoked);

  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().length === 1, 10_000);

  expect(bridge.crm.statusReports()[0]?.body).toMatchObject({
    status: "failed",
    error: { message: expect.stringMatching(/refused this location's API key for longer than SMS_HOLD_MAX: .*API key revoked/) },
  });
});

test("a held key holds only its own messages: another location's own key still sends", async () => {
  const bridge = await start();
  await bridge.seed("loc-2");
  await bridge.core.tokens.setConfig("loc-2", { smsApiKey: "loc-2-own-key-0123" }, Date.now());
  bridge.gateway.on(SEND, (req) => (req.headers["x-api-key"] === GLOBAL_SMS_KEY ? OUT_OF_CREDIT() : bridge.gateway.accept()));
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 0, currency: "PHP" }));

  expect((await bridge.webhook(outbound("m-held"))).status).toBe(200);
  await waitFor(() => bridge.gateway.calls().length >= 1);
  expect((await bridge.webhook(outbound("m-other", { locationId: "loc-2" }))).status).toBe(200);

  await waitFor(() => bridge.crm.statusReports().some((r) => r.messageId === "m-other"), 5_000);
  expect(bridge.crm.statusReports().map((r) => r.messageId)).toEqual(["m-other"]);
});

test("a refusal after an attempt without an answer keeps the idempotency key: once the key works again, no second SMS", async () => {
  const bridge = await start({ tuning: { sms: { timeoutMs: 200 }, sendBackoffMs: 50 } });
  const notWhitelisted = () => jsonResponse({ success: false, error: "IP not whitelisted", error_code: "IP_NOT_WHITELISTED" }, 403);
  let calls = 0;
  bridge.gateway.on(SEND, async () => {
    if (++calls > 1) return bridge.gateway.accept();
    // Cast sends, but answers after our timeout; then the operator's firewall change starts refusing us.
    bridge.gateway.checkKey(notWhitelisted);
    await sleep(600);
    return bridge.gateway.accept();
  });

  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => bridge.gateway.calls().length >= 3, 5_000); // the timed-out attempt, then refusals
  bridge.gateway.checkKey(undefined); // the operator whitelists the address again

  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(bridge.gateway.sent()).toHaveLength(1);
  expect(new Set(bridge.gateway.keys()).size).toBe(1);
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
});

test("held messages take no turns from their location's status reports", async () => {
  const bridge = await start();
  let answerReport: (() => void) | undefined;
  const reportHeld = new Promise<void>((resolve) => (answerReport = resolve));
  let reports = 0;
  bridge.crm.on("PUT /conversations/messages/:messageId/status", async () => {
    if (++reports > 1) return jsonResponse({ success: true });
    await reportHeld; // the first report is answered (503) only once the held messages wait
    return jsonResponse({ message: "busy" }, 503);
  });
  expect((await bridge.webhook(outbound("m-sent"))).status).toBe(200);
  await waitFor(() => reports === 1);

  bridge.gateway.on(SEND, OUT_OF_CREDIT);
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 0, currency: "PHP" }));
  for (let i = 0; i < 60; i++) expect((await bridge.webhook(outbound(`m-${i}`))).status).toBe(200);
  await waitFor(async () => (await Promise.all(Array.from({ length: 60 }, (_, i) => bridge.core.jobs.get(`m-${i}`)))).filter((j) => j?.held).length >= 40, 10_000);
  answerReport?.(); // the report is due again in moments, after every held message

  await waitFor(async () => (await bridge.core.jobs.get("m-sent"))?.state === "done", 10_000);
  expect(bridge.crm.statusReports().map((r) => r.messageId)).toEqual(["m-sent", "m-sent"]);
});

test("sixty locations waiting on a held shared key do not cut off a location with its own working key", async () => {
  const bridge = await start();
  bridge.gateway.on(SEND, (req) => (req.headers["x-api-key"] === GLOBAL_SMS_KEY ? OUT_OF_CREDIT() : bridge.gateway.accept()));
  bridge.gateway.on(BALANCE, () => jsonResponse({ success: true, credits: 0, currency: "PHP" }));
  const shared = Array.from({ length: 60 }, (_, i) => `loc-s${i}`);
  for (const locationId of shared) {
    await bridge.seed(locationId);
    expect((await bridge.webhook(outbound(`m-${locationId}`, { locationId }))).status).toBe(200);
  }
  await waitFor(async () => (await Promise.all(shared.map((id) => bridge.core.jobs.get(`m-${id}`)))).filter((j) => j?.held).length >= 40, 10_000);

  await bridge.seed("loc-own");
  await bridge.core.tokens.setConfig("loc-own", { smsApiKey: "loc-own-key-0123456" }, Date.now());
  expect((await bridge.webhook(outbound("m-own", { locationId: "loc-own" }))).status).toBe(200);

  await waitFor(() => bridge.crm.statusReports().some((r) => r.messageId === "m-own"), 10_000);
  expect(bridge.crm.statusReports().map((r) => r.messageId)).toEqual(["m-own"]);
});

test("a message refused (402) before its first send is not 'delivery unknown' when it goes a day later", async () => {
  let skew = 0;
  const bridge = await start({ env: { SMS_HOLD_MAX: "2d" }, now: () => Date.now() + skew });
  let credits = 0;
  bridge.gateway.on(SEND, () => (credits > 0 ? bridge.gateway.accept() : OUT_OF_CREDIT()));

  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.held);
  skew = 21 * 60 * 60_000; // past the 20 h in which an attempt without an answer may be repeated
  credits = 500;

  await waitFor(() => bridge.crm.statusReports().length === 1, 10_000);
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
});

test("a 402 kept under the key of an attempt without an answer, replayed after the top-up: a new key then, one SMS", async () => {
  const bridge = await start({ tuning: { sms: { timeoutMs: 200 }, sendBackoffMs: 50 } });
  let calls = 0;
  let credits = 0;
  const accepted: string[] = [];
  bridge.gateway.on(SEND, async (req) => {
    if (++calls === 1) {
      await sleep(400); // no answer in time, and then none at all: nothing is kept under the key
      throw new Error("gateway crashed before sending");
    }
    if (credits <= 0) return OUT_OF_CREDIT(); // kept under the key, as Cast keeps the first answer
    accepted.push(req.headers["x-idempotency-key"] ?? "");
    return bridge.gateway.accept();
  });

  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => calls >= 2, 5_000);
  credits = 500; // the operator tops up; the key still replays its 402

  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
  const [first] = bridge.gateway.keys();
  expect(accepted).toHaveLength(1);
  expect(accepted[0]).not.toBe(first);
  expect(bridge.logs.join("")).toMatch(/replayed its kept answer \(402\)/);
});

test("a held key's send probe is not spent on a message that only waits for the budget: it goes as soon as the budget allows", async () => {
  const bridge = await start({ worker: false, tuning: { holdProbeMs: 500 } });
  let credits = 0;
  bridge.gateway.on(SEND, () => (credits > 0 ? bridge.gateway.accept() : OUT_OF_CREDIT()));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  const run = async () => bridge.core.delivery.processOutbound((await bridge.core.jobs.get("m-1"))!);
  // Its first looks wait for the key's read of Cast's unsubscribed list, which holds no worker.
  while (typeof (await run()) === "number") await sleep(10);
  expect((await bridge.core.jobs.get("m-1"))?.held).toBe(true);
  await sleep(600); // the key's send probe comes due
  credits = 500;

  // A 429 has every send of the process waiting: the message that was to be the probe waits.
  bridge.core.delivery.scheduler.slowDown(undefined, 200);
  const wait = await run();
  expect(wait).toBeGreaterThan(0);
  expect(bridge.gateway.received(SEND)).toHaveLength(1);

  // Before, it had spent the probe: held for another probe's time, nothing sent.
  await sleep(Number(wait));
  expect(await run()).toBeUndefined();
  expect(bridge.gateway.received(SEND)).toHaveLength(2);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ held: false, outcome: "delivered" });
});

test("an old 200 Cast replays to a held key's probe does not lift the hold: only a fresh send proves the key works", async () => {
  const bridge = await start({ tuning: { sms: { timeoutMs: 200 }, sendBackoffMs: 1000 } });
  let calls = 0;
  bridge.gateway.on(SEND, async () => {
    if (++calls === 1) await sleep(400); // sent, but answered after the timeout: kept under the key
    return bridge.gateway.accept();
  });
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.unclear);
  // Meanwhile the account ran out of credit: another message's send was refused.
  bridge.core.delivery.holds.hold(GLOBAL_SMS_KEY, "send", new GatewayError("out_of_credit", "gateway rejected the message (402): Insufficient credits"));

  // m-1 goes again as the probe, with its key: Cast answers from its cache.
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  const keys = bridge.gateway.received(SEND).map((r) => r.headers["x-idempotency-key"]);
  expect(keys).toHaveLength(2);
  expect(new Set(keys).size).toBe(1);
  expect(bridge.gateway.sent()).toHaveLength(1);
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.core.delivery.holds.list()).toHaveLength(1);
  expect(bridge.logs.join("")).not.toContain("works again");
});

test("a key one server holds (401) is held on the other too: it sends nothing with it until a probe frees it", async () => {
  const first = await startWith({ balances: false, sync: false, beatMs: 50, env: { CAST_LOCAL_ADDRESS: "127.0.0.2" } }, "loc-1");
  const shared = { DATABASE_PATH: first.config.databasePath, SMS_API_URL: first.gateway.url, CRM_API_URL: first.crm.url };
  const second = await startWith({ balances: false, sync: false, beatMs: 50, worker: false, env: { ...shared, CAST_LOCAL_ADDRESS: "127.0.0.3" } });
  let refused = true;
  const invalid = () => castError(401, "INVALID_API_KEY", "invalid API key");
  first.gateway.on(SEND, () => (refused ? invalid() : first.gateway.accept()));
  first.gateway.on(BALANCE, () => (refused ? invalid() : jsonResponse({ success: true, credits: 100, currency: "PHP" })));

  expect((await first.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await first.core.gatewayKeys.list()).some((k) => k.heldSince !== null));
  // From now on the second server runs the queue; the first lets its keys go.
  await first.worker.stop(1000);
  await first.core.delivery.owners.releaseAll();
  await second.worker.start();
  for (const id of ["m-2", "m-3"]) expect((await second.webhook(outbound(id))).status).toBe(200);
  await waitFor(async () => (await second.core.messages.get("m-3"))?.status === "held", 5_000);
  await sleep(300);
  const from = (address: string) => first.gateway.received(SEND).filter((r) => r.remoteAddress === address);
  expect(from("127.0.0.3")).toEqual([]);
  expect(from("127.0.0.2")).toHaveLength(1);

  refused = false;
  await waitFor(() => first.crm.statusReports().filter((r) => r.body.status === "delivered").length >= 3, 10_000);
  expect(new Set(first.crm.statusReports().map((r) => r.messageId))).toEqual(new Set(["m-1", "m-2", "m-3"]));
});
