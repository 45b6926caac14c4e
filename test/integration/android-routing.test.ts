import { afterEach, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";
import { SEND } from "../helpers/fake-gateway.ts";

// A reply through POST /webhooks/android finds its location (CONTRACT 10, "Routing a reply to a location"):
// the receiving device's, if it serves one; else the one that last sent to that phone through that device; else none.
const start = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

/** A bridge where the phone DEVICE serves `served`; every other seeded location sends through Cast. */
async function bridgeWith(served: string[], ...others: string[]): Promise<{ bridge: Bridge; phone: FakePhone }> {
  const bridge = await start({ env: { CRM_PROVIDER_ID: "provider-routing" } }, ...served, ...others);
  const phone = await startFakePhone();
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  for (const locationId of served) expect(await bridge.core.phones.set(locationId, settings, Date.now())).toBe(true);
  return { bridge, phone };
}

/** Location `locationId` texts the contact (the fixture's sender), and the send has left. */
async function sendFrom(bridge: Bridge, phone: FakePhone, locationId: string, messageId: string): Promise<void> {
  const before = phone.received("POST /messages").length + bridge.gateway.received(SEND).length;
  expect((await bridge.webhook(outbound(messageId, { locationId }))).status).toBe(200);
  await waitFor(() => phone.received("POST /messages").length + bridge.gateway.received(SEND).length > before);
  await waitFor(async () => (await bridge.core.jobs.get(messageId))?.state === "reporting");
}

/** The contact's reply as the phone posts it; what bridge stored of it. */
async function replyThroughPhone(bridge: Bridge, phone: FakePhone) {
  const res = await phone.post(`${bridge.url}/webhooks/android`, phone.envelope("sms:received"));
  expect(res.status).toBe(200);
  const { id } = JSON.parse(res.body) as { id: string };
  return bridge.core.replies.get(id);
}

test("a device serving one location: routed to it by device, though another location sent to the contact since", async () => {
  const { bridge, phone } = await bridgeWith(["loc-1"], "loc-cast");
  await sendFrom(bridge, phone, "loc-cast", "m-cast");
  expect(await replyThroughPhone(bridge, phone)).toMatchObject({ locationId: "loc-1", routedBy: "device", state: "queued" });
});

test("a device serving two: the one that last sent to the contact through that device, not a later send through Cast", async () => {
  const { bridge, phone } = await bridgeWith(["loc-1", "loc-2"], "loc-cast");
  await sendFrom(bridge, phone, "loc-1", "m-1");
  await sendFrom(bridge, phone, "loc-2", "m-2");
  await sendFrom(bridge, phone, "loc-cast", "m-cast");
  expect(phone.received("POST /messages")).toHaveLength(2);
  expect(await replyThroughPhone(bridge, phone)).toMatchObject({ locationId: "loc-2", routedBy: "last_sent", state: "queued" });
});

test("a device serving two, neither of which sent to the contact through it: unrouted, even when a Cast location did", async () => {
  const { bridge, phone } = await bridgeWith(["loc-1", "loc-2"], "loc-cast");
  await sendFrom(bridge, phone, "loc-cast", "m-cast");
  expect(await replyThroughPhone(bridge, phone)).toMatchObject({ locationId: "", routedBy: "", state: "unrouted" });
  expect(bridge.logs.join("")).toMatch(/\[warn\] reply in-\S+ from \S+ is for no known location: stored unrouted/);
});
