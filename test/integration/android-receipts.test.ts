import { afterEach, expect, test } from "vitest";
import { showMessage } from "../../src/core/operator/messages.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";
import { jsonResponse } from "../helpers/http.ts";

// A phone's message can stay `Sent` for ever (docs/services/android-gateway-api.md): at the end of its wait it is
// not reported delivered, as a Cast message without a receipt is (CONTRACT 7), since `Sent` is not
// delivered (CONTRACT 10). It is reported failed, delivery unknown: bridge does not know, and says so.
const start = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

/**
 * A bridge on a clock the test moves, loc-1 on the phone; its wait for a receipt:
 * max(DLR_WAIT, ANDROID_SEND_DEADLINE) = 2 min, and a minute's grace for a state that cannot be read.
 */
async function onPhone() {
  const clock = { now: Date.now() };
  const env = { DLR_WAIT: "1m", ANDROID_SEND_DEADLINE: "2m" };
  const bridge = await start({ now: () => clock.now, env, tuning: { receiptGraceMs: 60_000 } }, "loc-1");
  const phone = await startFakePhone();
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  expect(bridge.core.phones.set("loc-1", settings, Date.now())).toBe(true);
  return { bridge, phone, clock };
}

/** Queues m-1 and waits until the phone holds it; the id it went under. */
async function sendOne(bridge: Bridge, phone: FakePhone): Promise<string> {
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  const id = await waitFor(() => bridge.core.jobs.get("m-1")?.idempotencyKey ?? undefined);
  await waitFor(() => phone.messages.has(`${DEVICE}:${id}`) && bridge.core.jobs.get("m-1")?.state === "reporting");
  return id;
}

const reports = (bridge: Bridge) => bridge.crm.statusReports().filter((r) => r.messageId === "m-1").map((r) => r.body);

test("still Sent at the end of its wait: reported failed, delivery unknown, never delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Sent");
  clock.now += 3 * 60_000;
  await waitFor(() => bridge.core.jobs.get("m-1")?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([
    {
      status: "failed",
      error: {
        code: "delivery_unknown",
        type: "saas",
        message: "the phone sent it and the carrier took it, but no delivery report came by the end of its wait; delivery unknown",
      },
    },
  ]);
  expect(bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "failed", receipt: "none" });
  expect(showMessage(bridge.core.messages, "m-1").timeline.filter((e) => e.event === "receipt").map((e) => e.detail)).toEqual([
    "no final state from the phone by the end of its wait: delivery unknown",
  ]);
  expect(phone.received(`DELETE /messages/${id}`)).toHaveLength(0); // sent: nothing to cancel
});

test("a message the phone no longer knows (404) at the end of its wait: delivery unknown, not delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.messages.delete(`${DEVICE}:${id}`); // the app's data cleared, say
  clock.now += 3 * 60_000;
  await waitFor(() => bridge.core.jobs.get("m-1")?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([
    { status: "failed", error: { code: "delivery_unknown", type: "saas", message: "the phone no longer knows the message (404); delivery unknown" } },
  ]);
});

test("a state that cannot be read through the grace past its wait: delivery unknown, not delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  await sendOne(bridge, phone);
  phone.on("GET /messages/:id", () => jsonResponse({ message: "internal server error" }, 500));
  clock.now += 4 * 60_000;
  await waitFor(() => bridge.core.jobs.get("m-1")?.state === "done", 10_000);
  const [report] = reports(bridge) as { status: string; error: { code: string; message: string } }[];
  expect(report).toMatchObject({ status: "failed", error: { code: "delivery_unknown" } });
  expect(report!.error.message).toMatch(/^its state could not be read from the phone by the end of its wait: phone refused the state call \(500\).*; delivery unknown$/);
});

test("Delivered before the end of its wait is still reported delivered", async () => {
  const { bridge, phone, clock } = await onPhone();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Delivered");
  clock.now += 10_000; // its next look, well within its wait
  await waitFor(() => bridge.core.jobs.get("m-1")?.state === "done", 10_000);
  expect(reports(bridge)).toEqual([{ status: "delivered" }]);
});
