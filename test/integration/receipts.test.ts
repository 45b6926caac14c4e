import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { CAST, castError, LOGS, SEND, STATUS } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";
import { TEST_STORE } from "../helpers/test-store.ts";

/** Delivery receipts (docs/architecture.md, "Receipts"): Cast's acceptance is not delivery. */

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith(options, "loc-1");

async function deliver(bridge: Bridge, messageId: string) {
  expect((await bridge.webhook(outbound(messageId))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get(messageId))?.state === "done", 10_000);
  return bridge.crm.statusReports().filter((r) => r.messageId === messageId);
}

test("a delivered receipt is read from the account's log: no status call", async () => {
  const bridge = await start();

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
});

test("delivered is reported only once the carrier's receipt says so", async () => {
  const bridge = await start();
  bridge.gateway.receipts((_, since) => (since < 300 ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.logCalls().length).toBeGreaterThanOrEqual(2);
  expect(bridge.gateway.logCalls()[0]?.headers["x-api-key"]).toBe(bridge.env.SMS_API_KEY);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
});

test.each([
  { dlr: "REJECTD", status: "undelivered", says: "the carrier rejected the message (REJECTD)" },
  { dlr: "UNDELIV", status: "undelivered", says: "the carrier could not deliver the message (UNDELIV)" },
  { dlr: "EXPIRED", status: "undelivered", says: "the message expired before the carrier could deliver it (EXPIRED)" },
  { dlr: "DELETED", status: "undelivered", says: "the carrier deleted the message before delivering it (DELETED)" },
])("accepted by Cast, then $dlr from the carrier: reported failed with the carrier's code, logged", async ({ dlr, status, says }) => {
  const bridge = await start();
  bridge.gateway.receipts(() => ({ status, dlr_status: dlr }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: dlr, type: "saas", message: says } }]);
  expect(bridge.gateway.sent()).toHaveLength(1);
  expect(bridge.logs.join("")).toContain(`[warn] message m-1 of location loc-1 failed: ${says}`);
});

test("the carrier's UNKNOWN is final: reported failed, delivery unknown, not left waiting for DLR_WAIT", async () => {
  const bridge = await start();
  bridge.gateway.receipts(() => ({ status: "sent", dlr_status: "UNKNOWN" }));

  const reports = await deliver(bridge, "m-1");

  const says = "the carrier could not say whether it was delivered (UNKNOWN); delivery unknown";
  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "delivery_unknown", type: "saas", message: says } }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "UNKNOWN" });
});

test.each([
  { dlr: "DELETED", status: "sent", outcome: "failed" },
  { dlr: "UNKNOWN", status: "pending", outcome: "failed" },
])("the status call's $dlr settles the message whatever its status word ($status)", async ({ dlr, status, outcome }) => {
  const bridge = await start();
  bridge.gateway.receipts(() => ({ status, dlr_status: dlr }));
  // The log cannot be read: only the status call tells.
  bridge.gateway.on(LOGS, () => castError(503, "SERVICE_UNAVAILABLE", "service unavailable"));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body.status)).toEqual([outcome]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: dlr });
});

test("a Cast 404 at the deadline for a message its log never listed: reported failed, delivery unknown, never delivered", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" } });
  bridge.gateway.on(LOGS, () => jsonResponse({ ...CAST.logs, count: 0, logs: [] }));
  bridge.gateway.on(STATUS, () => castError(404, "NOT_FOUND", "message not found"));

  const reports = await deliver(bridge, "m-1");

  const says = "Cast no longer knows the message (404 to its status call) and its log never listed it; delivery unknown";
  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "delivery_unknown", type: "saas", message: says } }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "failed", receipt: "none" });
});

test("a Cast 404 at the deadline for a message its log listed as sent: Cast submitted it, reported delivered (no receipt)", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" } });
  bridge.gateway.receipts(() => ({ status: "sent" }));
  bridge.gateway.on(STATUS, () => castError(404, "NOT_FOUND", "message not found"));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "none" });
});

test("a message sent again after a 429 is timed from the send Cast accepted, not from its first claim", async () => {
  let clock = Date.now();
  const token = "metrics-token-do-not-log-0123";
  const bridge = await start({ now: () => clock, env: { METRICS_TOKEN: token } });
  bridge.gateway.forgetFailedAnswers();
  let sends = 0;
  bridge.gateway.on(SEND, () => (++sends === 1 ? castError(429, "RATE_LIMIT_EXCEEDED", "rate limit exceeded", { "retry-after": "1" }) : bridge.gateway.accept()));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.errorMessage?.includes("429"));

  clock += 10 * 60_000; // its retry goes ten minutes after its first claim, and is accepted
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "reporting");
  clock += 20; // its first look: the receipt is in the key's log
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");

  expect(sends).toBe(2);
  const text = await (await bridge.fetch("/metrics", { headers: { authorization: `Bearer ${token}` } })).text();
  const delay = Number(/^bridge_receipt_delay_seconds_sum\{outcome="delivered"\} (\S+)$/m.exec(text)?.[1]);
  expect(delay).toBeLessThan(1);
});

test("Cast's own failure after acceptance (credits refunded): reported failed", async () => {
  const bridge = await start();
  bridge.gateway.receipts(() => ({ status: "failed", error_message: "route unavailable" }));

  const reports = await deliver(bridge, "m-1");

  // The log says only that the submission failed; Cast's reason is the status call's.
  expect(reports[0]?.body).toMatchObject({ status: "failed", error: { code: "FAILED", message: expect.stringMatching(/refunded \(FAILED\)/) } });
});

test("no final receipt within DLR_WAIT: reported delivered, and the job says no receipt came", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" } });
  bridge.gateway.receipts(() => ({ status: "pending", dlr_status: "ACCEPTD" }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "none" });
  expect(bridge.logs.join("")).toContain("message m-1 of location loc-1: no delivery receipt in time; reported delivered");
});

test("a log read that fails: its message is asked for alone; once the log answers, receipts come from it again", async () => {
  const bridge = await start();
  let calls = 0;
  // Down until the message has been asked for alone.
  bridge.gateway.on(LOGS, (req, event) => {
    calls++;
    return bridge.gateway.statusCalls().length === 0 ? castError(500, "INTERNAL_ERROR", "internal error") : bridge.gateway.own(LOGS)(req, event);
  });

  expect((await deliver(bridge, "m-1")).map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls().map((r) => r.path)).toEqual(["/api/v1/sms/status/cast-1"]);

  expect((await deliver(bridge, "m-2")).map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls()).toHaveLength(1);
  expect(calls).toBeGreaterThanOrEqual(2);
});

test("DLR_WAIT=0: reported on the gateway's acceptance, no receipt asked for", async () => {
  const bridge = await start({ env: { DLR_WAIT: "0" } });

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls()).toEqual([]);
});

test("the receipts of many messages come from a few log reads, not a status call each", async () => {
  const bridge = await start({ tuning: { receiptBookMs: 500 } });
  const ids = Array.from({ length: 30 }, (_, i) => `m-${i}`);
  for (const id of ids) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().length === 30, 10_000);

  expect(bridge.crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(bridge.gateway.logCalls().length).toBeLessThan(10);
});

test("a message behind the log's newest page is found by paging back, whatever count says: no status call", async () => {
  const bridge = await start();
  // 500 messages sent after it (by another system on the same account) fill the first page.
  // Cast does not say `count` is the total: its example has count 1 with one entry, so each
  // page here counts its own entries, and only an empty page ends the log.
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const newer = Array.from({ length: 500 }, (_, i) => ({ ...CAST.logs.logs[1], id: 90_000 - i, smpp_message_id: `CASTnewer${i}`, created_at: now }));
  bridge.gateway.on(LOGS, async (req, event) => {
    const offset = Number(req.query.get("offset") ?? 0);
    if (offset < 500) return jsonResponse({ success: true, count: newer.slice(offset).length, logs: newer.slice(offset) });
    const query = new URLSearchParams(req.query);
    query.set("offset", String(offset - 500));
    const own = (await bridge.gateway.own(LOGS)({ ...req, query }, event)) as Response;
    return jsonResponse(await own.json());
  });

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(bridge.gateway.logCalls().map((r) => r.query.get("offset"))).toContain("500");
});

test("a message the log does not list is asked for alone once it is a minute old", async () => {
  let clock = Date.now();
  const bridge = await start({ now: () => clock });
  bridge.gateway.on(LOGS, () => jsonResponse({ ...CAST.logs, count: 0, logs: [] }));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "reporting");
  clock += 20; // its first look: the key's log is read from then on
  await waitFor(() => bridge.gateway.logCalls().length >= 2);
  expect(bridge.gateway.statusCalls()).toEqual([]);

  clock += 61_000;
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");

  expect(bridge.gateway.statusCalls().map((r) => r.path)).toEqual(["/api/v1/sms/status/cast-1"]);
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
});

test("the log cannot be read: each message is asked for alone", async () => {
  const bridge = await start();
  bridge.gateway.on(LOGS, () => castError(503, "SERVICE_UNAVAILABLE", "service unavailable"));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls().map((r) => r.path)).toEqual(["/api/v1/sms/status/cast-1"]);
});

test("at the deadline one last status call: a receipt the log never showed still counts", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" } });
  // The log shows no receipt; the status call has the carrier's refusal.
  bridge.gateway.on(LOGS, (req, event) => {
    bridge.gateway.receipts(() => ({ status: "sent" }));
    return bridge.gateway.own(LOGS)(req, event);
  });
  bridge.gateway.on(STATUS, (req, event) => {
    bridge.gateway.receipts(() => ({ status: "undelivered", dlr_status: "REJECTD" }));
    return bridge.gateway.own(STATUS)(req, event);
  });

  const reports = await deliver(bridge, "m-1");

  expect(bridge.gateway.statusCalls()).toHaveLength(1);
  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "REJECTD", type: "saas", message: "the carrier rejected the message (REJECTD)" } }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "REJECTD" });
});

test("at the deadline the status call gets no answer: asked again until it answers, and the carrier's REJECTD is reported", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" } });
  // The log does not list it; Cast knows REJECTD, but its status calls fail for a while.
  bridge.gateway.on(LOGS, () => jsonResponse({ ...CAST.logs, count: 0, logs: [] }));
  bridge.gateway.receipts(() => ({ status: "undelivered", dlr_status: "REJECTD" }));
  let failing = 2;
  bridge.gateway.on(STATUS, (req, event) => (failing-- > 0 ? castError(503, "SERVICE_UNAVAILABLE", "service unavailable") : bridge.gateway.own(STATUS)(req, event)));

  const reports = await deliver(bridge, "m-1");

  expect(bridge.gateway.statusCalls()).toHaveLength(3);
  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "REJECTD", type: "saas", message: "the carrier rejected the message (REJECTD)" } }]);
});

test("no answer to the status call through the grace past DLR_WAIT: reported delivered, its timeline saying the status could not be read", async () => {
  const bridge = await start({ env: { DLR_WAIT: "1s" }, tuning: { receiptGraceMs: 300 } });
  bridge.gateway.on(LOGS, () => jsonResponse({ ...CAST.logs, count: 0, logs: [] }));
  bridge.gateway.on(STATUS, () => castError(503, "SERVICE_UNAVAILABLE", "service unavailable"));

  const reports = await deliver(bridge, "m-1");

  expect(bridge.gateway.statusCalls().length).toBeGreaterThanOrEqual(2);
  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "none" });
  const shown = (await (await bridge.admin("/api/admin/messages/m-1")).json()) as { timeline: { event: string; detail: string }[] };
  expect(shown.timeline).toContainEqual(
    expect.objectContaining({ event: "error", detail: expect.stringMatching(/^its delivery status could not be read by the end of DLR_WAIT: .*503/) }),
  );
});

test("a campaign of 650 messages on one key: every receipt settled from paged log reads, no status call", async () => {
  const bridge = await start({ env: { CAST_MESSAGES_PER_SECOND: "1000", CAST_REQUESTS_PER_SECOND: "1000" }, tuning: { receiptBookMs: 200 } });
  // No receipt comes until the whole campaign is out; then every 20th is refused.
  let receipts = false;
  bridge.gateway.receipts((message) =>
    !receipts ? { status: "sent" } : Number(message.split("-").at(-1)) % 20 === 0 ? { status: "undelivered", dlr_status: "REJECTD" } : { status: "delivered", dlr_status: "DELIVRD" },
  );
  const ids = Array.from({ length: 650 }, (_, i) => `m-${i}`);
  for (const id of ids) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await waitFor(() => bridge.gateway.sent().length === 650, 90_000);
  expect(bridge.crm.statusReports()).toEqual([]);

  receipts = true;
  await waitFor(() => bridge.crm.statusReports().length === 650, 90_000);

  const reported = new Map(bridge.crm.statusReports().map((r) => [r.messageId, r.body.status]));
  expect(ids.filter((id, i) => reported.get(id) !== (i % 20 === 0 ? "failed" : "delivered"))).toEqual([]);
  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(bridge.gateway.logCalls().some((r) => Number(r.query.get("offset")) >= 500)).toBe(true);
  expect(bridge.logs.join("")).not.toContain("[error]");
}, 240_000);

sqliteOnly("reads next_attempt_at with core.db")("a look 20-60 s after the send is scheduled in whole milliseconds: no error, no back-off", async () => {
  let clock = Date.now();
  const bridge = await start({ now: () => clock });
  bridge.gateway.receipts(() => ({ status: "sent" }));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "reporting");
  const nextLook = bridge.core.db.prepare<[string], number>("SELECT next_attempt_at FROM jobs WHERE message_id = ?").pluck();
  const sentAt = (await bridge.core.jobs.get("m-1"))!.firstSentAt!;

  // (now - sentAt) / 4 is a fraction here: 30,001 ms after the send.
  clock = sentAt + 30_001;
  await waitFor(() => nextLook.get("m-1")! > clock || bridge.logs.join("").includes("[error]"));

  expect(bridge.logs.join("")).not.toContain("[error]");
  expect(Number.isInteger(nextLook.get("m-1"))).toBe(true);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ state: "reporting", receipt: null });
});

test("two servers on one database: a key's log is read by one of them, and every job settles from its reads", async () => {
  // Each server sends from its own address (CAST_LOCAL_ADDRESS): the fake Cast tells who read.
  // The key's rate is ample, so that one server's tokens do not take the whole burst of six:
  // the key's shared row lets half its burst go at once (castKeyRate), and both servers must send.
  const rate = { CAST_MESSAGES_PER_SECOND: "30" };
  const first = await startWith({ balances: false, sync: false, beatMs: 50, env: { ...rate, CAST_LOCAL_ADDRESS: "127.0.0.2" } }, "loc-1");
  const shared = { ...rate, DATABASE_PATH: first.config.databasePath, SMS_API_URL: first.gateway.url, CRM_API_URL: first.crm.url };
  const second = await startWith({ balances: false, sync: false, beatMs: 50, env: { ...shared, CAST_LOCAL_ADDRESS: "127.0.0.3" } });
  first.gateway.receipts((_, since) => (since < 400 ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));

  // Which server wins a job's claim is a race: six more messages at a time until both have sent some.
  const ids: string[] = [];
  const sentBy = () => new Set(first.gateway.received(SEND).map((r) => r.remoteAddress));
  // Who read the log during each batch: once none of the key's messages waits, its lease
  // goes, and the next batch's reader may be the other server.
  const readers: Set<string>[] = [];
  while (ids.length < 6 || (sentBy().size < 2 && ids.length < 30)) {
    const before = first.gateway.logCalls().length;
    const batch = [1, 2, 3, 4, 5, 6].map((n) => `m-${ids.length + n}`);
    for (const [i, id] of batch.entries()) expect((await (i % 2 ? second : first).webhook(outbound(id))).status).toBe(200);
    ids.push(...batch);
    await waitFor(async () => (await Promise.all(ids.map((id) => first.core.jobs.get(id)))).every((j) => j?.state === "done"), 10_000);
    readers.push(new Set(first.gateway.logCalls().slice(before).map((r) => r.remoteAddress)));
  }

  expect(sentBy()).toEqual(new Set(["127.0.0.2", "127.0.0.3"])); // both servers ran jobs
  for (const batch of readers) expect(batch.size).toBe(1);
  expect(first.gateway.statusCalls()).toEqual([]);
  for (const id of ids) expect(await first.core.jobs.get(id)).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
  // Two bridges on one SQLite file may both report a job (no claim names its server there): each is told delivered.
  for (const id of ids) expect(first.crm.statusReports().filter((r) => r.messageId === id).map((r) => r.body)).toContainEqual({ status: "delivered" });
  expect(first.crm.statusReports().filter((r) => r.body.status !== "delivered")).toEqual([]);
  if (TEST_STORE === "postgres") expect(first.crm.statusReports()).toHaveLength(ids.length);
});

test("two servers on one database: a key's lease goes once none of its messages waits, so that the other server takes it at once", async () => {
  const first = await startWith({ balances: false, sync: false, beatMs: 50, env: { CAST_LOCAL_ADDRESS: "127.0.0.2" } }, "loc-1");
  const shared = { DATABASE_PATH: first.config.databasePath, SMS_API_URL: first.gateway.url, CRM_API_URL: first.crm.url };
  const second = await startWith({ balances: false, sync: false, beatMs: 50, env: { ...shared, CAST_LOCAL_ADDRESS: "127.0.0.3" } });
  first.gateway.receipts((_, since) => (since < 300 ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));
  const keyLease = async () => (await first.core.leases.list()).find((l) => l.name.startsWith("key:"));

  expect((await first.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await first.core.jobs.get("m-1"))?.state === "done", 10_000);
  // The key's log was read by one of them; with nothing more waiting, its lease is let go (well within its 15 s).
  expect(first.gateway.logCalls().length).toBeGreaterThan(0);
  await waitFor(async () => ((await keyLease())?.leftMs ?? 0) <= 0, 5_000);
  expect(await first.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
  const { name, holder } = (await keyLease())!;
  const other = holder === first.presence.id ? second : first;
  expect(await other.core.leases.take(name, other.presence.id, 15_000)).toBeGreaterThan(0);
});
