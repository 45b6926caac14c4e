import { describe, expect, test } from "vitest";
import { routeInbound } from "../../src/core/inbound/operator.ts";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

const PROVIDER = "provider-0123456789";
const PHONE = "+639171234567";
const start = bridgePerTest();

function bridgeWith(options: BridgeOptions = {}, ...locations: string[]): Promise<Bridge> {
  return start({ ...options, env: { CRM_PROVIDER_ID: PROVIDER, ...options.env } }, ...locations);
}

async function reply(bridge: Bridge, body: Record<string, unknown>): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await bridge.admin("/api/inbound", { method: "POST", body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function stored(bridge: Bridge, id: unknown) {
  return await bridge.core.replies.get(String(id));
}

describe("a reply through POST /api/inbound", () => {
  test("lands in HighLevel: the contact by upsert, then the inbound message with direction, altId and conversationProviderId", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const { status, json } = await reply(bridge, { from: "09171234567", text: "yes, see you", location_id: "loc-1", received_at: "2026-11-24T08:00:00+08:00" });
    expect(status).toBe(200);
    expect(json).toEqual({ id: expect.stringMatching(/^in-/), duplicate: false });
    await waitFor(async () => (await stored(bridge, json.id))?.state === "done");

    const [upsert] = bridge.crm.received("POST /contacts/upsert");
    expect(upsert?.headers).toMatchObject({ version: "2021-07-28", authorization: "Bearer at-seed-loc-1" });
    expect(JSON.parse(upsert?.body ?? "")).toEqual({ locationId: "loc-1", phone: PHONE });
    const [posted] = bridge.crm.received("POST /conversations/messages/inbound");
    expect(posted?.headers).toMatchObject({ version: "2021-04-15", authorization: "Bearer at-seed-loc-1" });
    const contactId = bridge.crm.replies.contacts[0]?.id;
    expect(JSON.parse(posted?.body ?? "")).toEqual({
      type: "SMS",
      direction: "inbound",
      contactId,
      message: "yes, see you",
      altId: json.id,
      date: "2026-11-24T00:00:00.000Z",
      conversationProviderId: PROVIDER,
    });
    expect(await stored(bridge, json.id)).toMatchObject({ locationId: "loc-1", routedBy: "given", contactId, crmMessageId: bridge.crm.replies.inbound[0]?.messageId });
  });

  test("a copy with the same id is answered as a duplicate and posted once", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const body = { from: PHONE, text: "twice", location_id: "loc-1", id: "source-7" };
    const first = await reply(bridge, body);
    await waitFor(async () => (await stored(bridge, first.json.id))?.state === "done");
    const again = await reply(bridge, body);
    expect(again).toEqual({ status: 200, json: { id: first.json.id, duplicate: true } });
    expect(bridge.crm.replies.inbound).toHaveLength(1);
  });

  test.each([
    [{ text: "no sender" }, /from/],
    [{ from: "not a phone", text: "hi" }, /from is not a phone number/],
    [{ from: PHONE, text: "" }, /text/],
    [{ from: PHONE, text: "hi", received_at: "yesterday" }, /received_at/],
    [{ from: PHONE, text: "hi", location_id: "../x" }, /location_id/],
    [{ from: PHONE, text: "hi", location_id: "loc-unknown" }, /loc-unknown is not a location where the app is installed/],
  ])("bad input %j: 400, nothing stored", async (body, message) => {
    const bridge = await bridgeWith({}, "loc-1");
    const { status, json } = await reply(bridge, body);
    expect(status).toBe(400);
    expect(String(json.error)).toMatch(message);
    expect(await bridge.core.replies.counts()).toMatchObject({ queued: 0, unrouted: 0, done: 0 });
  });

  test("without the bearer key: 401", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const res = await bridge.fetch("/api/inbound", { method: "POST", body: JSON.stringify({ from: PHONE, text: "hi" }) });
    expect(res.status).toBe(401);
  });

  test("without CRM_PROVIDER_ID: 503 saying what to set, and the sink refuses the phone's too", async () => {
    const bridge = await start({}, "loc-1");
    const { status, json } = await reply(bridge, { from: PHONE, text: "hi", location_id: "loc-1" });
    expect(status).toBe(503);
    expect(json.error).toMatch(/CRM_PROVIDER_ID is not set; set it to the id of the app's conversation provider/);
    await expect(bridge.core.inbound.sink.receive({ source: "android", from: PHONE, text: "hi", deviceId: "d1", receivedAt: "2026-11-24T08:00:00+08:00" })).rejects.toThrow(
      /CRM_PROVIDER_ID/,
    );
    expect(await bridge.core.replies.counts()).toMatchObject({ queued: 0, unrouted: 0 });
  });
});

describe("replies share the group commit", () => {
  test("two copies of one reply arriving together are one reply: the second, in the same transaction, is the duplicate", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const copy = { source: "api" as const, from: PHONE, text: "together", locationId: "loc-1", sourceId: "src-together" };
    const [a, b] = await Promise.all([bridge.core.inbound.sink.receive(copy), bridge.core.inbound.sink.receive(copy)]);
    expect(a.id).toBe(b.id);
    expect([a.duplicate, b.duplicate].sort()).toEqual([false, true]);
    expect(await bridge.core.replies.list({ limit: 10 })).toHaveLength(1);
  });
});

describe("routing a reply", () => {
  test("to the location that last sent to the phone, in either form it was written", async () => {
    const bridge = await bridgeWith({}, "loc-1", "loc-2");
    expect((await bridge.webhook(outbound("m-1", { locationId: "loc-1", phone: PHONE }))).status).toBe(200);
    expect((await bridge.webhook(outbound("m-2", { locationId: "loc-2", phone: "09171234567" }))).status).toBe(200);
    const { json } = await reply(bridge, { from: PHONE, text: "which one?" });
    await waitFor(async () => (await stored(bridge, json.id))?.state === "done");
    expect(await stored(bridge, json.id)).toMatchObject({ locationId: "loc-2", routedBy: "last_sent" });
  });

  test("the phone's copies of one reply (other envelope ids) are one reply, routed like any", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    await bridge.core.phones.set("loc-1", { gateway: "android", url: "http://127.0.0.1:9", user: "sms", password: "pw", deviceId: "device-1", signingKey: "key" }, Date.now());
    const copy = { source: "android" as const, from: PHONE, text: "ok", deviceId: "device-1", receivedAt: "2024-06-22T15:46:11.000+07:00" };
    const first = await bridge.core.inbound.sink.receive(copy);
    expect(await bridge.core.inbound.sink.receive(copy)).toEqual({ id: first.id, duplicate: true });
    expect((await bridge.core.inbound.sink.receive({ ...copy, text: "ok!" })).duplicate).toBe(false);
    // Without its receivedAt a copy cannot be told from the same words sent again: each is a reply.
    const undated = { ...copy, receivedAt: undefined };
    expect((await bridge.core.inbound.sink.receive(undated)).id).not.toBe((await bridge.core.inbound.sink.receive(undated)).id);
    await waitFor(async () => (await stored(bridge, first.id))?.state === "done");
    expect(await stored(bridge, first.id)).toMatchObject({ routedBy: "device", locationId: "loc-1", deviceId: "device-1" });
  });

  test("to no location: stored unrouted, warned, not posted; routed later by the operator, then posted", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const { status, json } = await reply(bridge, { from: "+639180000000", text: "who is this?" });
    expect(status).toBe(200);
    expect(await stored(bridge, json.id)).toMatchObject({ state: "unrouted", locationId: "" });
    expect(bridge.logs.join("")).toContain(`reply ${String(json.id)} from 0918***0000 is for no known location`);
    await expect(routeInbound(bridge.core.replies, String(json.id), "loc-9", Date.now())).rejects.toThrow(/loc-9 is not a location/);
    await routeInbound(bridge.core.replies, String(json.id), "loc-1", Date.now());
    await waitFor(async () => (await stored(bridge, json.id))?.state === "done");
    expect(await stored(bridge, json.id)).toMatchObject({ routedBy: "operator", locationId: "loc-1" });
    expect(bridge.crm.replies.inbound).toHaveLength(1);
  });
});

describe("delivery to HighLevel", () => {
  test("HighLevel down, then up: retried, posted once", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    bridge.crm.replies.state.down = 503;
    const { json } = await reply(bridge, { from: PHONE, text: "are you there?", location_id: "loc-1" });
    await waitFor(() => bridge.crm.received("POST /contacts/upsert").length >= 2);
    bridge.crm.replies.state.down = 0;
    await waitFor(async () => (await stored(bridge, json.id))?.state === "done");
    expect(bridge.crm.replies.inbound).toHaveLength(1);
  });

  test("the inbound post refused with 503: tried again, posted once", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const taken = bridge.crm.replies.routes["POST /conversations/messages/inbound"];
    let refusals = 2;
    bridge.crm.on("POST /conversations/messages/inbound", (req, event) => (refusals-- > 0 ? jsonResponse({ message: "unavailable" }, 503) : taken(req, event)));
    const { json } = await reply(bridge, { from: PHONE, text: "again", location_id: "loc-1" });
    await waitFor(async () => (await stored(bridge, json.id))?.state === "done");
    expect(bridge.crm.received("POST /conversations/messages/inbound")).toHaveLength(3);
    expect(bridge.crm.replies.inbound).toHaveLength(1);
  });

  test("the inbound post answered 201 without a message id (HighLevel dropped it): failed, not posted again", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    bridge.crm.on("POST /conversations/messages/inbound", () => new Response(null, { status: 201 }));
    const { json } = await reply(bridge, { from: PHONE, text: "dropped", location_id: "loc-1" });
    await waitFor(async () => (await stored(bridge, json.id))?.state === "dead");
    expect((await stored(bridge, json.id))?.error).toMatch(/^delivery unknown: .*without a message id/);
    expect(bridge.crm.received("POST /conversations/messages/inbound")).toHaveLength(1);
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("HighLevel took it but its answer cannot be stored: left posting, not posted again", async () => {
    const bridge = await bridgeWith({ tuning: { resultStoreRetryMs: 1 } }, "loc-1");
    // The disk refuses the one write that records the post, however often it is tried.
    bridge.core.db.exec("CREATE TRIGGER refuse_posted BEFORE UPDATE OF state ON inbound WHEN NEW.state = 'done' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
    const { json } = await reply(bridge, { from: PHONE, text: "taken", location_id: "loc-1" });
    const posts = () => bridge.crm.received("POST /conversations/messages/inbound").length;
    await waitFor(() => bridge.logs.some((l) => l.includes("which could not be stored (disk I/O error)")) || posts() > 1);
    expect((await stored(bridge, json.id))?.state).toBe("posting");
    expect(bridge.crm.received("POST /conversations/messages/inbound")).toHaveLength(1);
  });
});

describe("opt-out by reply", () => {
  test("STOP: the contact's SMS DND set through the upsert and the number listed (by: reply); START lifts both", async () => {
    const bridge = await bridgeWith({}, "loc-1");
    const optOuts = bridge.core.optOutList;
    const stop = await reply(bridge, { from: PHONE, text: " Stop! ", location_id: "loc-1" });
    expect(await optOuts.has("loc-1", PHONE)).toBe(true);
    expect(await bridge.core.optOuts.list("loc-1")).toMatchObject([{ phone: PHONE, by: "reply" }]);
    await waitFor(async () => (await stored(bridge, stop.json.id))?.state === "done");
    const dnd = (i: number) => (JSON.parse(bridge.crm.received("POST /contacts/upsert")[i]?.body ?? "{}") as { dndSettings?: unknown }).dndSettings;
    expect(dnd(0)).toEqual({ SMS: { status: "active", message: "opted out by SMS" } });
    expect(bridge.crm.replies.contacts[0]?.smsDnd).toBe("active");

    // A message to the number now fails without a send, until START.
    expect((await bridge.webhook(outbound("m-blocked", { locationId: "loc-1", phone: PHONE }))).status).toBe(200);
    await waitFor(() => bridge.crm.statusReports().length === 1);
    expect(bridge.crm.statusReports()[0]?.body).toMatchObject({ status: "failed", error: { message: "recipient opted out" } });
    expect(bridge.gateway.received(SEND)).toHaveLength(0);

    const again = await reply(bridge, { from: PHONE, text: "unstop", location_id: "loc-1" });
    expect(await optOuts.has("loc-1", PHONE)).toBe(false);
    await waitFor(async () => (await stored(bridge, again.json.id))?.state === "done");
    expect(dnd(1)).toMatchObject({ SMS: { status: "inactive" } });
    expect(bridge.crm.replies.contacts[0]?.smsDnd).toBe("inactive");
    expect(bridge.crm.replies.inbound.map((m) => m.body.message)).toEqual([" Stop! ", "unstop"]);
    expect((await bridge.webhook(outbound("m-after", { locationId: "loc-1", phone: PHONE }))).status).toBe(200);
    await waitFor(() => bridge.gateway.received(SEND).length === 1);
  });
});

test("bridge status and /metrics count replies: received, posted, unrouted", async () => {
  const token = "metrics-token-do-not-log-0123";
  const bridge = await bridgeWith({ env: { METRICS_TOKEN: token } }, "loc-1");
  const posted = await reply(bridge, { from: PHONE, text: "routed", location_id: "loc-1" });
  await reply(bridge, { from: "+639180000000", text: "unrouted" });
  await waitFor(async () => (await stored(bridge, posted.json.id))?.state === "done");
  const status = (await (await bridge.admin("/api/admin/status")).json()) as { inbound: unknown };
  expect(status.inbound).toEqual({ received: 2, posted: 1, waiting: 0, unrouted: 1, failed: 0 });
  const metrics = await (await bridge.fetch("/metrics", { headers: { authorization: `Bearer ${token}` } })).text();
  expect(metrics).toContain('bridge_inbound_messages{state="done"} 1');
  expect(metrics).toContain('bridge_inbound_messages{state="unrouted"} 1');
});
