import { afterEach, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";
import { jsonResponse } from "../helpers/http.ts";

// A phone's message can stay `Sent` for ever (docs/services/android-gateway-api.md): many phones and carriers
// never send a delivery report. At the end of its wait a `Sent` one is reported delivered with receipt
// "none", as a Cast message without a receipt is (CONTRACT 5.7); one never seen to leave the phone (still
// Pending or Processed, unknown to it, unreadable) is reported failed, delivery unknown.
const start = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

/**
 * A bridge on a clock the test moves, loc-1 on the phone; its wait for a receipt:
 * max(DLR_WAIT, ANDROID_SEND_DEADLINE) = 2 min, and a minute's grace for a state that cannot be read.
 */
async function onPhone(more: Record<string, string> = {}) {
  const clock = { now: Date.now() };
  const env = { DLR_WAIT: "1m", ANDROID_SEND_DEADLINE: "2m", ...more };
  const bridge = await start({ now: () => clock.now, env, tuning: { receiptGraceMs: 60_000 } }, "loc-1");
  const phone = await startFakePhone({ now: () => clock.now });
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  expect(await bridge.core.phones.set("loc-1", settings, Date.now())).toBe(true);
  return { bridge, phone, clock };
}

/** Queues m-1 and waits until the phone holds it; the id it went under. */
async function sendOne(bridge: Bridge, phone: FakePhone): Promise<string> {
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  const id = await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.idempotencyKey ?? undefined);
  await waitFor(async () => phone.messages.has(`${DEVICE}:${id}`) && (await bridge.core.jobs.get("m-1"))?.state === "reporting");
  return id;
}

const reports = (bridge: Bridge) => bridge.crm.statusReports().filter((r) => r.messageId === "m-1").map((r) => r.body);

test("still Sent at the end of its wait: reported delivered with receipt none, as Cast's without a receipt", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Sent");
  clock.now += 3 * 60_000;
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "none" });
});

test.each([
  ["Processed", false],
  ["Pending", true],
] as const)("still %s past its ttl at the end of its wait: delivery unknown, never \"the phone did not send it\"", async (state, off) => {
  // Processed: handed to Android, which may have sent it; Pending on a phone that is off: it may yet go.
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, state);
  phone.asleep(off);
  clock.now += 3 * 60_000; // past its ttl (ANDROID_SEND_DEADLINE, 2 min) and its wait
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([
    { status: "failed", error: { code: "delivery_unknown", type: "saas", message: "the phone still had it as pending at the end of its wait; delivery unknown" } },
  ]);
  expect(phone.requests.filter((r) => r.method === "DELETE")).toEqual([]);
});

test("Pending past its ttl on a phone that is on: the phone expires it, reported failed, the phone did not send it", async () => {
  const { bridge, phone, clock } = await onPhone();
  await sendOne(bridge, phone);
  clock.now += 2 * 60_000 + 1000; // past its ttl, within its wait
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([
    { status: "failed", error: { code: "PHONE_NOT_SENT", type: "saas", message: "the phone did not send it: TTL expired" } },
  ]);
});

test("a message the phone no longer knows (404) at the end of its wait: delivery unknown, not delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.messages.delete(`${DEVICE}:${id}`); // the app's data cleared, say
  clock.now += 3 * 60_000;
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([
    { status: "failed", error: { code: "delivery_unknown", type: "saas", message: "the phone no longer knows the message (404); delivery unknown" } },
  ]);
});

test("a message the phone said it sent, then no longer knows (404) at the end of its wait: delivered, receipt none", async () => {
  // The carrier took it: reported failed, the user would send it again, and the contact get it twice.
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Sent");
  clock.now += 10_000; // its next look reads Sent, and the log records that the phone sent it
  const job = (await bridge.core.jobs.get("m-1"))!;
  await waitFor(() => bridge.core.jobs.wasSentByPhone(job.id), 10_000);
  phone.messages.delete(`${DEVICE}:${id}`); // the app's data cleared, say
  clock.now += 3 * 60_000;
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([{ status: "delivered" }]);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "delivered", receipt: "none" });
});

test("a state that cannot be read through the grace past its wait: delivery unknown, not delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  await sendOne(bridge, phone);
  phone.on("GET /messages/:id", () => jsonResponse({ message: "internal server error" }, 500));
  clock.now += 4 * 60_000;
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  const [report] = reports(bridge) as { status: string; error: { code: string; message: string } }[];
  expect(report).toMatchObject({ status: "failed", error: { code: "delivery_unknown" } });
  expect(report!.error.message).toMatch(/^its state could not be read from the phone by the end of its wait: phone refused the state call \(500\).*; delivery unknown$/);
});

test("Delivered before the end of its wait is still reported delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Delivered");
  clock.now += 10_000; // its next look, well within its wait
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([{ status: "delivered" }]);
});

test("a phone's receipt is asked of the phone alone: its key is never read as a log first", async () => {
  // A phone pushes its receipts and keeps no log (its driver's receipts.source, "pushed"):
  // the receipt book never tries one, and the message is asked for at its first look.
  const { bridge, phone, clock } = await onPhone({ LOG_LEVEL: "debug" });
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Delivered");
  clock.now += 10_000; // past the first look
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([{ status: "delivered" }]);
  expect(phone.received("GET /messages/").length).toBe(1);
  expect(bridge.logs.filter((l) => l.includes("has no log of messages"))).toEqual([]);
});
