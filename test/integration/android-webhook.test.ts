import { afterEach, expect, test } from "vitest";
import type { InboundReply, InboundSink } from "../../src/core/inbound/reply.ts";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// POST /webhooks/android (CONTRACT 10): verified with the device's signing key; status events settle jobs.
const startWith = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

async function start(options: BridgeOptions = {}): Promise<{ bridge: Bridge; phone: FakePhone; url: string }> {
  const bridge = await startWith(options, "loc-1");
  const phone = await startFakePhone();
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  await bridge.core.phones.set("loc-1", settings, Date.now());
  return { bridge, phone, url: `${bridge.url}/webhooks/android` };
}

async function sendOne(bridge: Bridge, phone: FakePhone, messageId: string): Promise<string> {
  expect((await bridge.webhook(outbound(messageId))).status).toBe(200);
  const id = await waitFor(async () => (await bridge.core.jobs.get(messageId))?.idempotencyKey ?? undefined);
  await waitFor(async () => (await bridge.core.jobs.get(messageId))?.state === "reporting");
  expect(phone.messages.size).toBe(1);
  return id;
}

const reports = (bridge: Bridge, messageId: string) => bridge.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);

test.each([
  ["unsigned", { key: null }, "unsigned"],
  ["signed with another key", { key: "not-the-key" }, "wrong"],
  ["six minutes old", { timestamp: Math.floor(Date.now() / 1000) - 360 }, "stale"],
] as const)("%s: 401, nothing settled, a warning", async (_, sign, why) => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  const res = await phone.post(url, phone.envelope("sms:delivered", { messageId: id }), sign);
  expect(res.status).toBe(401);
  expect(JSON.parse(res.body)).toEqual({ error: "invalid webhook signature" });
  expect((await bridge.core.jobs.get("m-1"))?.state).toBe("reporting");
  expect((await bridge.core.jobs.get("m-1"))?.receipt).toBeNull();
  expect(bridge.logs.join("")).toContain(`[warn] phone webhook from device ${DEVICE} refused: ${why} signature; nothing stored`);
});

test("a device no location sends through: 401", async () => {
  const { phone, url } = await start();
  const res = await phone.post(url, { ...phone.envelope("sms:delivered"), deviceId: "unknown-device" });
  expect(res.status).toBe(401);
});

test("sms:delivered settles the job sent under the message id: reported delivered though the phone still says Pending", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  const res = await phone.post(url, phone.envelope("sms:delivered", { messageId: id }));
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toEqual({ ok: true, settled: true });
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
  expect(phone.messages.get(`${DEVICE}:${id}`)?.state).toBe("Pending");
});

test("sms:failed settles it failed with the phone's reason", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  // Not the fixture's RESULT_ERROR_LIMIT_EXCEEDED: that one sent nothing and goes again (android-delivery.test.ts).
  expect((await phone.post(url, phone.envelope("sms:failed", { messageId: id, reason: "RESULT_ERROR_NO_SERVICE" }))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  expect(reports(bridge, "m-1")).toEqual([
    { status: "failed", error: { code: "PHONE_FAILED", type: "saas", message: "the phone could not send it: RESULT_ERROR_NO_SERVICE" } },
  ]);
});

test("sms:sent settles nothing: the carrier took it, the recipient may not have it", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  expect((await phone.post(url, phone.envelope("sms:sent", { messageId: id }))).status).toBe(200);
  expect((await bridge.core.jobs.get("m-1"))?.state).toBe("reporting");
  expect((await bridge.core.jobs.get("m-1"))?.receipt).toBeNull();
});

test("sms:received while CRM_PROVIDER_ID is unset: 503 saying what to set (the phone keeps it and tries again)", async () => {
  const { phone, url } = await start();
  const res = await phone.post(url, phone.envelope("sms:received"));
  expect(res.status).toBe(503);
  expect(JSON.parse(res.body).error).toMatch(/^inbound messages are refused: CRM_PROVIDER_ID is not set; set it to/);
});

test("sms:received is handed to the sink before the 200, twice when the phone sends it twice", async () => {
  const got: InboundReply[] = [];
  const sink: InboundSink = { receive: async (reply) => (got.push(reply), { id: `in-${got.length}`, duplicate: got.length > 1 }) };
  const { phone, url } = await start({ inbound: sink });
  const first = await phone.post(url, phone.envelope("sms:received"));
  expect(first.status).toBe(200);
  expect(JSON.parse(first.body)).toEqual({ id: "in-1", duplicate: false });
  // The same SMS with another envelope id (issues #291, #310, #372): the sink decides it is one.
  expect((await phone.post(url, phone.envelope("sms:received"))).status).toBe(200);
  const expected: InboundReply = {
    source: "android",
    from: "+639171234567",
    text: "Android is always a sweet treat!",
    deviceId: DEVICE,
    to: "+639181234567",
    receivedAt: "2024-06-22T15:46:11.000+07:00",
  };
  expect(got).toEqual([expected, expected]);
});

test("refusals are logged at most 20 a minute: anyone can post, and must not flood the log", async () => {
  const { bridge, phone, url } = await start();
  for (let i = 0; i < 25; i++) expect((await phone.post(url, phone.envelope("sms:delivered"), { key: "forged" })).status).toBe(401);
  const lines = bridge.logs.join("").split("\n").filter((l) => l.includes("phone webhook from device"));
  // The logger writes a run of the same line once, "(repeated N times)".
  const logged = lines.reduce((n, l) => n + Number(/\(repeated (\d+) times\)/.exec(l)?.[1] ?? 1), 0);
  expect(logged).toBe(20);
  expect(lines.at(-1)).toContain("further refusals this minute are not logged");
});
