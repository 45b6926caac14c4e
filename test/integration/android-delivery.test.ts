import { afterEach, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { TEST_STORE } from "../helpers/test-store.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// A location whose gateway is "android" sends through its phone (docs/android.md), with the queue's promises.
const startWith = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

async function start(options: BridgeOptions = {}, device = DEVICE): Promise<{ bridge: Bridge; phone: FakePhone }> {
  const bridge = await startWith(options, "loc-1");
  const phone = await startFakePhone();
  phones.push(phone);
  await usePhone(bridge, phone, "loc-1", device);
  return { bridge, phone };
}

async function usePhone(bridge: Bridge, phone: FakePhone, locationId: string, deviceId = DEVICE) {
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId, signingKey: SIGNING_KEY };
  expect(await bridge.core.phones.set(locationId, settings, Date.now())).toBe(true);
}

async function queue(bridge: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  expect((await bridge.webhook(outbound(messageId, fields))).status).toBe(200);
}

/** The id the phone got the job's message under: the job's idempotency key. */
async function sentAs(bridge: Bridge, phone: FakePhone, messageId: string): Promise<string> {
  const key = await waitFor(async () => (await bridge.core.jobs.get(messageId))?.idempotencyKey ?? undefined);
  await waitFor(() => phone.messages.has(`${DEVICE}:${key}`));
  return key;
}

const reports = (bridge: Bridge, messageId: string) => bridge.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);
const done = (bridge: Bridge, messageId: string) => waitFor(async () => (await bridge.core.jobs.get(messageId))?.state === "done", 10_000);

test("sent through the phone: its id, the pinned device, E.164; Delivered is reported delivered", async () => {
  const { bridge, phone } = await start();
  await queue(bridge, "m-1");
  const id = await sentAs(bridge, phone, "m-1");
  const [send] = phone.received("POST /messages");
  expect(JSON.parse(send!.body)).toEqual({
    id,
    deviceId: DEVICE,
    phoneNumbers: ["+639171234567"],
    textMessage: { text: "hello m-1" },
    ttl: 600, // ANDROID_SEND_DEADLINE's default, in seconds
    withDeliveryReport: true,
  });
  expect(id.length).toBeLessThanOrEqual(36);
  expect(bridge.gateway.sent()).toEqual([]); // nothing through Cast
  expect(bridge.gateway.unsubscribedCalls()).toEqual([]); // nor Cast's list: the phone's SIM is not a Cast account

  phone.advance(id, "Delivered");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "DELIVRD", gatewayMessageId: id });
});

test("Sent is not delivered: nothing is reported until the phone says Delivered", async () => {
  const { bridge, phone } = await start();
  await queue(bridge, "m-1");
  const id = await sentAs(bridge, phone, "m-1");
  phone.advance(id, "Sent");
  const asked = phone.received(`GET /messages/${id}`).length;
  // Two more looks after Sent: the job has seen it and still waits.
  await waitFor(() => phone.received(`GET /messages/${id}`).length >= asked + 2);
  expect((await bridge.core.jobs.get("m-1"))?.state).toBe("reporting");
  expect(reports(bridge, "m-1")).toEqual([]);

  phone.advance(id, "Delivered");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
});

test("Failed is reported failed with the phone's reason", async () => {
  const { bridge, phone } = await start();
  await queue(bridge, "m-1");
  const id = await sentAs(bridge, phone, "m-1");
  phone.advance(id, "Failed", "RESULT_ERROR_NO_SERVICE");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([
    { status: "failed", error: { code: "PHONE_FAILED", type: "saas", message: "the phone could not send it: RESULT_ERROR_NO_SERVICE" } },
  ]);
});

test("a send the phone took but whose answer was lost: the retry's 409 is read back, never sent again", async () => {
  const { bridge, phone } = await start();
  phone.answerNextSend(503, true);
  await queue(bridge, "m-1");
  const id = await sentAs(bridge, phone, "m-1");
  await waitFor(() => phone.received(`GET /messages/${id}`).length >= 1);
  const sends = phone.received("POST /messages").map((r) => JSON.parse(r.body) as { id: string });
  expect(sends.map((s) => s.id)).toEqual([id, id]); // the second answered 409
  expect(phone.messages.size).toBe(1);
  phone.advance(id, "Delivered");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
});

test("every send carries ANDROID_SEND_DEADLINE as its ttl; past it the phone drops the message unsent: failed, the phone did not send it, no DELETE", async () => {
  const { bridge, phone } = await start({ env: { ANDROID_SEND_DEADLINE: "1s" } });
  await queue(bridge, "m-1");
  const id = await sentAs(bridge, phone, "m-1");
  expect(JSON.parse(phone.received("POST /messages")[0]!.body)).toMatchObject({ id, ttl: 1 });
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([
    { status: "failed", error: { code: "PHONE_NOT_SENT", type: "saas", message: "the phone did not send it: TTL expired" } },
  ]);
  // The API has no cancel call: bridge never asks for one.
  expect(phone.requests.filter((r) => r.method === "DELETE")).toEqual([]);
});

test("RESULT_ERROR_LIMIT_EXCEEDED is not a failure: the message goes again later under a new id, once, and the phone waits first", async () => {
  const { bridge, phone } = await start({ tuning: { phoneLimitedMs: 400 } });
  phone.limit(0); // Android refuses the next send: nothing leaves the phone
  await queue(bridge, "m-1");
  const first = await sentAs(bridge, phone, "m-1");
  phone.limit(100);
  // The phone's sms:failed for it (fixtures/android/sms-failed.json) settles nothing: the poll puts it back.
  const [failed] = phone.events(first);
  expect((await phone.post(`${bridge.url}/webhooks/android`, failed!)).body).toContain('"settled":false');
  await waitFor(() => phone.messages.size === 2, 10_000);
  const [taken, again] = [...phone.messages.values()];
  const second = again!.id;
  expect(second).not.toBe(first);
  expect(taken).toMatchObject({ id: first, state: "Failed", reason: "RESULT_ERROR_LIMIT_EXCEEDED" });
  expect((await bridge.core.jobs.get("m-1"))?.idempotencyKey).toBe(second);
  // The device backed off before its next send.
  expect(again!.takenAt - taken!.takenAt).toBeGreaterThanOrEqual(400);
  expect(reports(bridge, "m-1")).toEqual([]);
  phone.advance(second, "Delivered");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
  expect(phone.received("POST /messages")).toHaveLength(2);
  expect(bridge.logs.join("")).toContain("not sent: RESULT_ERROR_LIMIT_EXCEEDED; it goes again in 1 s");
});

test("a phone's hourly budget: ANDROID_MESSAGES_PER_HOUR sends in an hour, then its messages wait", async () => {
  const { bridge, phone } = await start({ env: { ANDROID_MESSAGES_PER_MINUTE: "10000", ANDROID_MESSAGES_PER_HOUR: "2" } });
  for (const id of ["m-1", "m-2", "m-3"]) await queue(bridge, id);
  await waitFor(() => phone.messages.size === 2);
  await waitFor(() => bridge.core.delivery.scheduler.readyAt("loc-1") > Date.now() + 59 * 60_000);
  expect(phone.received("POST /messages")).toHaveLength(2);
  expect((await bridge.core.jobs.get("m-3"))?.state).toBe("queued");
});

test("a restart does not start the phone's hour afresh: the bridge started again counts the sends before it", async () => {
  const env = { ANDROID_MESSAGES_PER_MINUTE: "10000", ANDROID_MESSAGES_PER_HOUR: "2" };
  const { bridge: before, phone } = await start({ env });
  for (const id of ["m-1", "m-2"]) await queue(before, id);
  await waitFor(() => phone.messages.size === 2);
  await before.close();
  const after = await startWith({ env: { ...env, DATABASE_PATH: before.config.databasePath } });
  await queue(after, "m-3");
  await waitFor(() => after.core.delivery.scheduler.readyAt("loc-1") > Date.now() + 59 * 60_000);
  expect(phone.received("POST /messages")).toHaveLength(2);
  expect((await after.core.jobs.get("m-3"))?.state).toBe("queued");
});

// Two bridges on one SQLite file are a test's: serve's lock lets one server run on a file, and it keeps every budget.
(TEST_STORE === "postgres" ? test : test.skip)("two servers on one database: a phone's hourly budget holds for both, one server sending through the phone at a time", async () => {
  const env = { ANDROID_MESSAGES_PER_MINUTE: "10000", ANDROID_MESSAGES_PER_HOUR: "2" };
  const { bridge: first, phone } = await start({ beatMs: 50, balances: false, sync: false, env });
  const second = await startWith({ beatMs: 50, balances: false, sync: false, env: { ...env, DATABASE_PATH: first.config.databasePath, CRM_API_URL: first.crm.url } });
  const ids = ["m-1", "m-2", "m-3", "m-4", "m-5", "m-6"];
  for (const [i, id] of ids.entries()) await queue(i % 2 ? second : first, id);
  await waitFor(() => phone.messages.size === 2, 10_000);
  // Both servers' queues (a look every 20 ms) have had time to start every message: none goes past the budget.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(phone.received("POST /messages")).toHaveLength(2);
  const jobs = await Promise.all(ids.map((id) => first.core.jobs.get(id)));
  expect(jobs.filter((job) => job?.state === "queued")).toHaveLength(4);
});

test("a message the phone's pace told to wait keeps its place: a later one whose reads end after the wait does not go first", async () => {
  const { bridge, phone } = await start({ env: { ANDROID_MESSAGES_PER_MINUTE: "60", ANDROID_MESSAGES_PER_HOUR: "2" } });
  // Reads of the store that take their time, as on a loaded database: m-2's a little (it is
  // told to wait for the phone's second while m-3's reads are still out), m-3's past that second.
  const late: Record<string, number> = { "+639171234568": 300, "+639171234569": 1500 };
  const optOuts = bridge.core.optOutList;
  const has = optOuts.has.bind(optOuts);
  optOuts.has = async (locationId, number) => {
    await new Promise((resolve) => setTimeout(resolve, late[number] ?? 0));
    return has(locationId, number);
  };
  await queue(bridge, "m-1");
  await queue(bridge, "m-2", { phone: "+639171234568" });
  await queue(bridge, "m-3", { phone: "+639171234569" });
  await waitFor(() => phone.messages.size === 2, 10_000);
  await waitFor(() => bridge.core.delivery.scheduler.readyAt("loc-1") > Date.now() + 59 * 60_000, 10_000);
  expect(phone.received("POST /messages").map((r) => (JSON.parse(r.body) as { textMessage: { text: string } }).textMessage.text)).toEqual(["hello m-1", "hello m-2"]);
  expect((await bridge.core.jobs.get("m-3"))?.state).toBe("queued");
});

test("the phone's pace: ANDROID_MESSAGES_PER_MINUTE per device, another phone not held up", async () => {
  const { bridge, phone } = await start({ env: { ANDROID_MESSAGES_PER_MINUTE: "1" } });
  await bridge.seed("loc-2");
  const other = await startFakePhone();
  phones.push(other);
  await usePhone(bridge, other, "loc-2", "other-device-0001");
  await queue(bridge, "m-1");
  await queue(bridge, "m-2");
  await sentAs(bridge, phone, "m-1");
  // m-2 waits for the phone's next minute: the scheduler says so for its location.
  await waitFor(() => bridge.core.delivery.scheduler.readyAt("loc-1") > Date.now());
  await queue(bridge, "m-3", { locationId: "loc-2" });
  await waitFor(() => other.messages.size === 1);
  expect(phone.received("POST /messages")).toHaveLength(1);
  expect((await bridge.core.jobs.get("m-2"))?.state).toBe("queued");
});

test("a phone that refuses the login holds its messages; once the login is right, the probe frees them and the message goes once", async () => {
  const { bridge, phone } = await start();
  await bridge.core.phones.set("loc-1", { password: "wrong-password" }, Date.now());
  await queue(bridge, "m-1");
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.held);
  expect(phone.messages.size).toBe(0);
  expect(bridge.logs.join("")).toContain("check the location's android user and password");

  await bridge.core.phones.set("loc-1", { password: PHONE_PASSWORD }, Date.now());
  const id = await sentAs(bridge, phone, "m-1");
  phone.advance(id, "Delivered");
  await done(bridge, "m-1");
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
  expect(phone.received("POST /messages").filter((r) => r.headers.authorization?.endsWith(Buffer.from(`${PHONE_USER}:${PHONE_PASSWORD}`).toString("base64")))).toHaveLength(1);
});

test("an unreachable phone: the message waits and goes once the phone is back", async () => {
  const { bridge, phone } = await start();
  await phone.close();
  await queue(bridge, "m-1");
  await waitFor(() => bridge.logs.join("").includes("phone unreachable (send)"));
  // The warning is logged as the try ends; the job is back in the queue once its result is stored.
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "queued");
  expect((await bridge.core.jobs.get("m-1"))?.outcome ?? null).toBeNull();
  // Back, at a new address (a phone's IP changes): the location is pointed at it.
  const again = await startFakePhone();
  phones.push(again);
  await bridge.core.phones.set("loc-1", { url: again.url }, Date.now());
  const id = await sentAs(bridge, again, "m-1");
  expect(again.received("POST /messages")).toHaveLength(1);
  again.advance(id, "Delivered");
  await done(bridge, "m-1");
});

test("a phone that stops answering is an outage: logged once, in bridge status with what waits on it, and ended when it answers", async () => {
  const { bridge, phone } = await start();
  await phone.close();
  await queue(bridge, "m-1");
  await waitFor(() => bridge.core.operator.outages.list().some((o) => o.remote === `phone:${DEVICE}`));
  expect(bridge.logs.filter((l) => l.includes(`phone ${DEVICE} unreachable`) && !l.includes("[debug]"))).toEqual([
    expect.stringMatching(new RegExp(`\\[warn\\] phone ${DEVICE} unreachable \\(refused\\): .*; its messages wait until it answers\\n$`)),
  ]);
  // The message's own reason, which the settings page shows its tenant, names the phone by its device, not its address.
  // The outage is known as the call fails; the message's reason is stored just after.
  const shown = await waitFor(async () => {
    const text = await (await bridge.admin("/api/admin/messages/m-1")).text();
    return text.includes(`phone ${DEVICE}`) && text;
  });
  expect(shown).not.toContain(new URL(phone.url).host);
  const view = (await (await bridge.admin("/api/admin/status")).json()) as { outages: unknown[] };
  expect(view.outages).toEqual([
    expect.objectContaining({ remote: `phone:${DEVICE}`, name: `phone ${DEVICE}`, kind: "refused", waiting_messages: 1 }),
  ]);

  const again = await startFakePhone();
  phones.push(again);
  await bridge.core.phones.set("loc-1", { url: again.url }, Date.now());
  await sentAs(bridge, again, "m-1");
  await waitFor(() => bridge.logs.some((l) => l.includes(`phone ${DEVICE} reachable again`)));
  expect(((await (await bridge.admin("/api/admin/status")).json()) as { outages: unknown[] }).outages).toEqual([]);
});
