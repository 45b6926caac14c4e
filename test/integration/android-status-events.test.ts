import { afterEach, expect, test } from "vitest";
import { carrierCode } from "../../src/db/failures.ts";
import { showMessage } from "../../src/core/operator/messages.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// A phone's status events settle safely (CONTRACT 10): only through the phone that sent the
// message, never a settled one again, and a multipart message from its whole state.
const startWith = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

const OTHER_DEVICE = "0000000000other0device00000000000";
const OTHER_KEY = "other-phone-signing-key";

/** loc-1 sends through DEVICE; loc-2 through another phone, with its own signing key. */
async function start(): Promise<{ bridge: Bridge; phone: FakePhone; url: string }> {
  const bridge = await startWith({}, "loc-1", "loc-2");
  const phone = await startFakePhone();
  phones.push(phone);
  const access = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD };
  expect(await bridge.core.phones.set("loc-1", { ...access, deviceId: DEVICE, signingKey: SIGNING_KEY }, Date.now())).toBe(true);
  expect(await bridge.core.phones.set("loc-2", { ...access, deviceId: OTHER_DEVICE, signingKey: OTHER_KEY }, Date.now())).toBe(true);
  return { bridge, phone, url: `${bridge.url}/webhooks/android` };
}

/** Queues `messageId` of loc-1 and waits until the phone holds it; the id it went under. */
async function sendOne(bridge: Bridge, phone: FakePhone, messageId: string, fields: Record<string, unknown> = {}): Promise<string> {
  expect((await bridge.webhook(outbound(messageId, fields))).status).toBe(200);
  const id = await waitFor(async () => (await bridge.core.jobs.get(messageId))?.idempotencyKey ?? undefined);
  await waitFor(async () => phone.messages.has(`${DEVICE}:${id}`) && (await bridge.core.jobs.get(messageId))?.state === "reporting");
  return id;
}

const reports = (bridge: Bridge, messageId: string) => bridge.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a late sms:failed after sms:delivered changes nothing: the message stays delivered, its timeline untouched", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  expect((await phone.post(url, phone.envelope("sms:delivered", { messageId: id }))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  const before = await bridge.core.jobs.get("m-1");
  const timeline = (await showMessage(bridge.core.messages, "m-1")).timeline;

  const late = await phone.post(url, phone.envelope("sms:failed", { messageId: id }));
  expect(late.status).toBe(200);
  expect(JSON.parse(late.body)).toEqual({ ok: true, settled: false });
  expect(await bridge.core.jobs.get("m-1")).toEqual(before);
  expect((await showMessage(bridge.core.messages, "m-1")).timeline).toEqual(timeline);
  expect(reports(bridge, "m-1")).toEqual([{ status: "delivered" }]);
});

test("sms:delivered and a late sms:failed arriving together: one settles it, the other changes nothing", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  const answers = await Promise.all(
    (["sms:delivered", "sms:failed"] as const).map(async (event) => JSON.parse((await phone.post(url, phone.envelope(event, { messageId: id }))).body)),
  );
  expect(answers.filter((a) => a.settled)).toHaveLength(1);
  const won = answers[0].settled ? "delivered" : "failed";
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  expect((await bridge.core.jobs.get("m-1"))?.outcome).toBe(won);
  expect(reports(bridge, "m-1").map((r) => r.status)).toEqual([won]);
  const failures = (await showMessage(bridge.core.messages, "m-1")).timeline.filter((e) => e.event === "failed");
  expect(failures).toHaveLength(won === "failed" ? 1 : 0);
});

test("a receipt written for a message already settled changes nothing (the store's guard)", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  expect((await phone.post(url, phone.envelope("sms:delivered", { messageId: id }))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  const job = (await bridge.core.jobs.get("m-1"))!;
  const failed = { outcome: "failed" as const, receipt: "PHONE_FAILED", errorCode: carrierCode("PHONE_FAILED"), errorMessage: "late" };
  expect(await bridge.core.jobs.recordReceipt(job.id, failed, Date.now())).toBe(false);
  expect(await bridge.core.jobs.get("m-1")).toEqual(job);
});

test("a status event signed by another phone settles nothing: only the device the message went through may", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1");
  const forged = { ...phone.envelope("sms:delivered", { messageId: id }), deviceId: OTHER_DEVICE };
  const res = await phone.post(url, forged, { key: OTHER_KEY });
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toEqual({ ok: true, settled: false });
  await sleep(100);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ state: "reporting", receipt: null, outcome: "delivered" });
  expect(reports(bridge, "m-1")).toEqual([]);
  expect(bridge.logs.join("")).toContain(`[warn] phone webhook from device ${OTHER_DEVICE}: sms:delivered for message ${id}, which was not sent through it; ignored`);

  // The device it went through still settles it.
  expect(JSON.parse((await phone.post(url, phone.envelope("sms:delivered", { messageId: id }))).body)).toEqual({ ok: true, settled: true });
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
});

test("a multipart message is not settled by one part's sms:delivered: the whole message's state decides", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone, "m-1", { message: "x".repeat(200) });
  expect((await bridge.core.jobs.get("m-1"))?.message.message).toHaveLength(200);
  phone.advance(id, "Sent");
  // The first part's delivery report; the second part then fails.
  const first = await phone.post(url, phone.envelope("sms:delivered", { messageId: id }));
  expect(JSON.parse(first.body)).toEqual({ ok: true, settled: false });
  await sleep(100);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ state: "reporting", receipt: null });
  expect(reports(bridge, "m-1")).toEqual([]);

  phone.advance(id, "Failed", "RESULT_ERROR_GENERIC_FAILURE");
  expect(JSON.parse((await phone.post(url, phone.envelope("sms:failed", { messageId: id }))).body)).toEqual({ ok: true, settled: false });
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge, "m-1")).toEqual([
    { status: "failed", error: { code: "PHONE_FAILED", type: "saas", message: "the phone could not send it: RESULT_ERROR_GENERIC_FAILURE" } },
  ]);
  expect(phone.received(`GET /messages/${id}`).length).toBeGreaterThan(0);
});
