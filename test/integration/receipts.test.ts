import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { CAST, castError, LOGS } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

/** Delivery receipts (CONTRACT.md 5.7): Cast's acceptance is not delivery. */

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith(options, "loc-1");

async function deliver(bridge: Bridge, messageId: string) {
  expect((await bridge.webhook(outbound(messageId))).status).toBe(200);
  await waitFor(() => bridge.core.jobs.get(messageId)?.state === "done", 10_000);
  return bridge.crm.statusReports().filter((r) => r.messageId === messageId);
}

test("a delivered receipt is read from the account's log: no status call", async () => {
  const bridge = await start();

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
});

test("delivered is reported only once the carrier's receipt says so", async () => {
  const bridge = await start();
  bridge.gateway.receipts((_, since) => (since < 300 ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.logCalls().length).toBeGreaterThanOrEqual(2);
  expect(bridge.gateway.logCalls()[0]?.headers["x-api-key"]).toBe(bridge.env.SMS_API_KEY);
  expect(bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD" });
});

test.each([
  { dlr: "REJECTD", status: "undelivered", says: "the carrier rejected the message (REJECTD)" },
  { dlr: "UNDELIV", status: "undelivered", says: "the carrier could not deliver the message (UNDELIV)" },
  { dlr: "EXPIRED", status: "undelivered", says: "the message expired before the carrier could deliver it (EXPIRED)" },
])("accepted by Cast, then $dlr from the carrier: reported failed with the carrier's code, logged", async ({ dlr, status, says }) => {
  const bridge = await start();
  bridge.gateway.receipts(() => ({ status, dlr_status: dlr }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: dlr, type: "saas", message: says } }]);
  expect(bridge.gateway.sent()).toHaveLength(1);
  expect(bridge.logs.join("")).toContain(`[warn] message m-1 of location loc-1 failed: ${says}`);
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
  expect(bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "none" });
  expect(bridge.logs.join("")).toContain("message m-1 of location loc-1: no delivery receipt in time; reported delivered");
});

test("a log read that fails is tried again, never reported failed", async () => {
  const bridge = await start();
  let calls = 0;
  bridge.gateway.on(LOGS, (req, event) => (++calls <= 2 ? castError(500, "INTERNAL_ERROR", "internal error") : bridge.gateway.own(LOGS)(req, event)));

  const reports = await deliver(bridge, "m-1");

  expect(calls).toBe(3);
  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
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

test("a message not on the log's newest page is asked for by itself", async () => {
  const bridge = await start();
  const others = Array.from({ length: 500 }, (_, i) => ({ ...CAST.logs.logs[1], id: 50_000 + i, smpp_message_id: `CASTother${i}` }));
  bridge.gateway.on(LOGS, () => jsonResponse({ success: true, count: 500, logs: others }));

  const reports = await deliver(bridge, "m-1");

  expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(bridge.gateway.statusCalls().map((r) => r.path)).toEqual(["/api/v1/sms/status/cast-1"]);
});

test("a look 20-60 s after the send is scheduled in whole milliseconds: no error, no back-off", async () => {
  let clock = Date.now();
  const bridge = await start({ now: () => clock });
  bridge.gateway.receipts(() => ({ status: "sent" }));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => bridge.core.jobs.get("m-1")?.state === "reporting");
  const nextLook = bridge.core.db.prepare<[string], number>("SELECT next_attempt_at FROM jobs WHERE message_id = ?").pluck();
  const sentAt = bridge.core.jobs.get("m-1")!.firstSentAt!;

  // (now - sentAt) / 4 is a fraction here: 30,001 ms after the send.
  clock = sentAt + 30_001;
  await waitFor(() => nextLook.get("m-1")! > clock || bridge.logs.join("").includes("[error]"));

  expect(bridge.logs.join("")).not.toContain("[error]");
  expect(Number.isInteger(nextLook.get("m-1"))).toBe(true);
  expect(bridge.core.jobs.get("m-1")).toMatchObject({ state: "reporting", receipt: null });
});
