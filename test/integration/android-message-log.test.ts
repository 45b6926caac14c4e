import { afterEach, expect, test } from "vitest";
import { showMessage } from "../../src/core/operator/messages.ts";
import { runCli } from "../helpers/cli.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// The message log tells a phone's message truthfully (CONTRACT 10): the gateway and device it went
// through, in the phone's terms, and "on the phone, not yet sent" while the phone holds it unsent.
const startWith = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

async function start(): Promise<{ bridge: Bridge; phone: FakePhone; url: string }> {
  const bridge = await startWith({}, "loc-1");
  const phone = await startFakePhone();
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  expect(await bridge.core.phones.set("loc-1", settings, Date.now())).toBe(true);
  return { bridge, phone, url: `${bridge.url}/webhooks/android` };
}

async function sendOne(bridge: Bridge, phone: FakePhone): Promise<string> {
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  const id = await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.idempotencyKey ?? undefined);
  await waitFor(async () => phone.messages.has(`${DEVICE}:${id}`) && (await bridge.core.jobs.get("m-1"))?.state === "reporting");
  return id;
}

interface Shown {
  status: string;
  gateway: string;
  device_id: string | null;
  timeline: { event: string; detail: string }[];
}

async function adminShow(bridge: Bridge): Promise<Shown> {
  const res = await bridge.admin("/api/admin/messages/m-1");
  expect(res.status).toBe(200);
  return (await res.json()) as Shown;
}

test("a message the phone holds Pending: gateway android (device), on the phone, not yet sent; nothing says cast or sent", async () => {
  const { bridge, phone } = await start();
  const id = await sendOne(bridge, phone);

  const show = await runCli(bridge, "messages", "show", "m-1");
  expect(show.code).toBe(0);
  expect(show.stdout).toMatch(new RegExp(`^gateway: +android \\(device ${DEVICE}\\) ${id}$`, "m"));
  expect(show.stdout).toMatch(/^status: +on_phone \(on the phone, not yet sent\)$/m);
  expect(show.stdout).toMatch(new RegExp(`  sending +to the phone \\(device ${DEVICE}\\), message id ${id}$`, "m"));
  expect(show.stdout).toMatch(new RegExp(`  taken +by the phone as ${id}, 1 part\\(s\\)`, "m"));
  expect(show.stdout).not.toContain("cast");
  expect(show.stdout).not.toMatch(/^  \S+  sent /m);

  const json = JSON.parse((await runCli(bridge, "messages", "show", "m-1", "--json")).stdout) as Shown;
  expect(json).toMatchObject({ status: "on_phone", gateway: "android", device_id: DEVICE });
  expect(json.timeline.map((t) => t.event)).toEqual(["received", "sending", "taken"]);
  // The same message, but for updated_at: the look for its receipt, meanwhile, touches it.
  expect(await adminShow(bridge)).toEqual({ ...json, updated_at: expect.any(String) });

  const list = await runCli(bridge, "messages", "list");
  expect(list.stdout).toMatch(/ out +m-1 .* on_phone +1 +on the phone, not yet sent$/m);
  expect((await runCli(bridge, "messages", "list", "--status", "on_phone", "--json")).stdout).toContain('"message_id": "m-1"');
});

test("once the phone says Sent (sms:sent): status sent, one sent line, by the phone; Delivered then settles it", async () => {
  const { bridge, phone, url } = await start();
  const id = await sendOne(bridge, phone);
  expect((await phone.post(url, phone.envelope("sms:sent", { messageId: id }))).status).toBe(200);

  const shown = await adminShow(bridge);
  expect(shown.status).toBe("sent");
  expect(shown.timeline.filter((t) => t.event === "sent")).toEqual([expect.objectContaining({ detail: "by the phone: the carrier took it (sms:sent)" })]);
  expect((await runCli(bridge, "messages", "list")).stdout).toMatch(/ sent +1 +waiting for the delivery receipt$/m);

  // The same again (the phone retries its webhooks) adds nothing.
  expect((await phone.post(url, phone.envelope("sms:sent", { messageId: id }))).status).toBe(200);
  expect((await adminShow(bridge)).timeline.filter((t) => t.event === "sent")).toHaveLength(1);

  phone.advance(id, "Delivered");
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  const done = await adminShow(bridge);
  expect(done.status).toBe("delivered");
  expect(done.timeline.map((t) => t.event)).toEqual(["received", "sending", "taken", "sent", "receipt", "reported"]);
});

test("a phone's Sent read from its state (no sms:sent came) is logged as sent too", async () => {
  const { bridge, phone } = await start();
  const id = await sendOne(bridge, phone);
  phone.advance(id, "Sent");
  await waitFor(async () => (await showMessage(bridge.core.messages, "m-1")).status === "sent", 10_000);
  expect((await adminShow(bridge)).timeline.find((t) => t.event === "sent")?.detail).toBe("by the phone: the carrier took it (its state, read from the phone)");
});
