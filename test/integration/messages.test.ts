import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

/** The message log through the admin API (docs/http.md, "Endpoints"): list, show, retry. */

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith(options, "loc-1", "loc-2");

async function settle(bridge: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  expect((await bridge.webhook(outbound(messageId, fields))).status).toBe(200);
  await waitFor(async () => ["done", "dead"].includes((await bridge.core.jobs.get(messageId))?.state ?? ""), 10_000);
}

async function get(bridge: Bridge, path: string) {
  const res = await bridge.admin(path);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

test("a delivered message: listed with its masked phone, parts, sender and gateway id; its timeline in order", async () => {
  const bridge = await start();
  await settle(bridge, "m-1", { message: "hello there" });

  const { body } = await get(bridge, "/api/admin/messages");
  expect(body.messages).toHaveLength(1);
  expect(body.next_cursor).toBeNull();
  expect(body.messages[0]).toMatchObject({
    message_id: "m-1",
    location_id: "loc-1",
    contact_id: "contact-1",
    phone: "0917***4567",
    status: "delivered",
    length: 11,
    parts: 1,
    sender_id: "",
    gateway: "cast",
    gateway_message_id: "cast-1",
    receipt: "DELIVRD",
    reported_status: "delivered",
    error_code: null,
  });
  expect(JSON.stringify(body)).not.toContain("9171234567");

  const shown = await get(bridge, "/api/admin/messages/m-1");
  expect(shown.status).toBe(200);
  expect(shown.body.timeline.map((t: { event: string }) => t.event)).toEqual(["received", "sending", "sent", "receipt", "reported"]);
  expect(shown.body.timeline[2].detail).toContain("accepted by cast as cast-1, 1 part(s)");
  expect(shown.body.idempotency_key).toBe(bridge.gateway.keys()[0]);
});

test("a failed message is findable by status, with its reason, and its timeline names the failure", async () => {
  const bridge = await start();
  await settle(bridge, "m-ok");
  await settle(bridge, "m-bad", { phone: "+12025550123" });

  const { body } = await get(bridge, "/api/admin/messages?status=failed");
  expect(body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-bad"]);
  expect(body.messages[0]).toMatchObject({ status: "failed", error_code: "invalid_phone", reported_status: "failed", phone: "+120***0123" });

  const shown = await get(bridge, "/api/admin/messages/m-bad");
  const failed = shown.body.timeline.find((t: { event: string }) => t.event === "failed");
  expect(failed.detail).toBe("invalid_phone: not a Philippine mobile number: +120***0123");
});

test("filters by location and time, newest first, and pages with next_cursor", async () => {
  const bridge = await start();
  for (let i = 1; i <= 5; i++) await settle(bridge, `m-${i}`, { locationId: i % 2 ? "loc-1" : "loc-2" });

  const loc1 = await get(bridge, "/api/admin/messages?location=loc-1");
  expect(loc1.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-5", "m-3", "m-1"]);

  const first = await get(bridge, "/api/admin/messages?limit=2");
  expect(first.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-5", "m-4"]);
  const second = await get(bridge, `/api/admin/messages?limit=2&cursor=${first.body.next_cursor}`);
  expect(second.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-3", "m-2"]);
  const third = await get(bridge, `/api/admin/messages?limit=2&cursor=${second.body.next_cursor}`);
  expect(third.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-1"]);
  expect(third.body.next_cursor).toBeNull();

  expect((await get(bridge, "/api/admin/messages?since=1h")).body.messages).toHaveLength(5);
  expect((await get(bridge, "/api/admin/messages?since=2999-01-01T00:00:00Z")).body.messages).toHaveLength(0);
});

test.each([
  ["status=lost", "status: must be one of queued, held, sending, on_phone, sent, delivered, failed"],
  ["since=yesterday", "since: must be an ISO 8601 time"],
  ["limit=0", "limit: must be a whole number from 1 to 500"],
  ["limit=501", "limit: must be a whole number from 1 to 500"],
  ["cursor=bm9wZQ", "cursor: not a cursor this server gave out"],
  ["location=..%2Fx", "location: not a location id"],
])("a bad query (%s) is a 400 saying what is wrong", async (query, says) => {
  const bridge = await start();
  const { status, body } = await get(bridge, `/api/admin/messages?${query}`);
  expect(status).toBe(400);
  expect(body.error).toContain(says);
});

test("an unknown message is a 404; a malformed id a 400; no key a 401", async () => {
  const bridge = await start();
  expect(await get(bridge, "/api/admin/messages/nope")).toEqual({ status: 404, body: { error: "message not found: nope" } });
  expect((await get(bridge, "/api/admin/messages/a%20b")).status).toBe(400);
  expect((await bridge.fetch("/api/admin/messages")).status).toBe(401);
  expect((await bridge.fetch("/api/admin/messages/m-1/retry", { method: "POST" })).status).toBe(401);
});

test("retry: a message refused before reaching the gateway goes again, once, with a new key; its history stays", async () => {
  const bridge = await start({ env: { SMS_SENDER_ID: "BRAND" } });
  bridge.gateway.on(SEND, () => jsonResponse({ success: false, error: "invalid sender", error_code: "VALIDATION_ERROR" }, 400));
  await settle(bridge, "m-1");
  const firstKey = bridge.gateway.keys()[0];
  expect(bridge.crm.statusReports().map((r) => r.body.status)).toEqual(["failed"]);

  bridge.gateway.on(SEND, bridge.gateway.accept);
  const res = await bridge.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ message_id: "m-1", queued: true });
  await waitFor(async () => bridge.crm.statusReports().length === 2 && (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);

  expect(bridge.crm.statusReports().map((r) => r.body.status)).toEqual(["failed", "delivered"]);
  expect(bridge.gateway.sent()).toHaveLength(2); // the refused attempt and the retry: one SMS left
  expect(bridge.gateway.keys()[1]).not.toBe(firstKey);
  const shown = await get(bridge, "/api/admin/messages/m-1");
  expect(shown.body.status).toBe("delivered");
  const events = shown.body.timeline.map((t: { event: string }) => t.event);
  expect(events).toEqual(expect.arrayContaining(["failed", "requeued", "sent", "reported"]));
  const requeued = shown.body.timeline.find((t: { event: string }) => t.event === "requeued");
  expect(requeued.detail).toMatch(/^queued again by an operator; it had failed \(gateway_rejected: gateway rejected the message \(400\): invalid sender\); HighLevel had been told failed at /);
});

test.each([
  {
    name: "the carrier refused it (REJECTD)",
    setup: (b: Bridge) => b.gateway.receipts(() => ({ status: "undelivered", dlr_status: "REJECTD" })),
    says: "the gateway accepted it and the carrier answered REJECTD: it reached the carrier",
  },
  {
    name: "an attempt got no clear answer (a 500, then the hold window ended)",
    setup: (b: Bridge) => b.gateway.on(SEND, () => jsonResponse({ success: false, error: "boom" }, 500)),
    env: { SMS_HOLD_MAX: "1s" },
    says: "an attempt got no clear answer from the gateway: it may have been delivered",
  },
])("retry is refused with 409 when $name, and nothing is sent", async ({ setup, env, says }) => {
  const bridge = await start({ env, tuning: { sendBackoffMs: 100 } });
  setup(bridge);
  await settle(bridge, "m-1");
  const sends = bridge.gateway.calls().length;

  const res = await bridge.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(409);
  expect(await res.json()).toEqual({ error: `message m-1 may not be retried: ${says}` });
  expect((await bridge.core.jobs.get("m-1"))?.state).toMatch(/done|dead/);
  expect(bridge.gateway.calls()).toHaveLength(sends);
});

test("retry is refused with 409 for a message whose number is not a Philippine mobile: it cannot be sent to", async () => {
  const bridge = await start();
  await settle(bridge, "m-1", { phone: "+6328123456" });
  expect((await bridge.core.messages.get("m-1"))?.errorCode).toBe("invalid_phone");

  const res = await bridge.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(409);
  expect(await res.json()).toEqual({
    error: "message m-1 may not be retried: its number cannot be sent to (not a Philippine mobile number: +632***3456)",
  });
  expect((await bridge.core.jobs.get("m-1"))?.state).toMatch(/done|dead/);
  expect(bridge.crm.statusReports()).toHaveLength(1);
});

test("retry: Cast's own FAILED receipt (never submitted to a carrier, credits refunded) may be retried", async () => {
  const bridge = await start();
  let failOnce = true;
  bridge.gateway.receipts(() => (failOnce ? { status: "failed", error_message: "route unavailable" } : { status: "delivered", dlr_status: "DELIVRD" }));
  await settle(bridge, "m-1");
  failOnce = false;

  const res = await bridge.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(200);
  await waitFor(async () => bridge.crm.statusReports().length === 2 && (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(bridge.crm.statusReports().map((r) => r.body.status)).toEqual(["failed", "delivered"]);
  expect(bridge.gateway.sent()).toHaveLength(2);
});

test("a delivered message may not be retried", async () => {
  const bridge = await start();
  await settle(bridge, "m-1");
  const res = await bridge.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(409);
  expect(((await res.json()) as { error: string }).error).toBe("message m-1 may not be retried: it has not failed (it is delivered)");
});

test("a held key's messages are listed as held, with the gateway's reason", async () => {
  const bridge = await start({ tuning: { holdProbeMs: 60_000 } });
  bridge.gateway.on(SEND, () => jsonResponse({ success: false, error: "Insufficient credits", error_code: "INSUFFICIENT_CREDITS" }, 402));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.messages.get("m-1"))?.status === "held", 5000);

  const { body } = await get(bridge, "/api/admin/messages?status=held");
  expect(body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(["m-1"]);
  expect(body.messages[0].error_message).toContain("Insufficient credits");
  const shown = await get(bridge, "/api/admin/messages/m-1");
  expect(shown.body.timeline.filter((t: { event: string }) => t.event === "held")).toHaveLength(1);
});

sqliteOnly("counts job_events with core.db")("pruning a finished message takes its events with it", async () => {
  const bridge = await start();
  await settle(bridge, "m-bad", { phone: "+12025550123" });
  const { db } = bridge.core;
  expect(db.prepare("SELECT count(*) AS n FROM job_events").get()).toEqual({ n: 1 });
  expect(await bridge.core.jobs.prune(Date.now() + 1000, 10)).toBe(1);
  expect(db.prepare("SELECT count(*) AS n FROM job_events").get()).toEqual({ n: 0 });
});
