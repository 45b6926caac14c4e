import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, runWithStdin, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// The built binary, both ways through one phone (CONTRACT 10): HighLevel's message out through the phone,
// the contact's reply back into HighLevel's conversation, and STOP / START as replies.
const PROVIDER = "provider-round-trip";
const CONTACT = "+639171234567";
let e2e: E2E;
let server: Serve;
let phone: FakePhone;
let hook: string;

beforeAll(async () => {
  e2e = await e2eSetup("round-trip", { BASE_URL: "https://bridge.example.com", CRM_PROVIDER_ID: PROVIDER });
  server = await startServe(e2e.env, e2e.dir);
  phone = await startFakePhone();
  hook = `${server.url}/webhooks/android`;
  e2e.crm.grantLocation("code-trip", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-trip`)).status).toBe(200);
  const set = await withStdin(
    `${PHONE_PASSWORD}\n`,
    ...["config", "set", "loc-1", "--gateway", "android", "--android-url", phone.url, "--android-user", PHONE_USER],
    ...["--android-device", DEVICE, "--android-password", "-"],
  );
  expect(set).toMatchObject({ code: 0, err: "" });
  expect(await withStdin(`${SIGNING_KEY}\n`, "config", "set", "loc-1", "--android-signing-key", "-")).toMatchObject({ code: 0, err: "" });
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  if (server) await exited(server.child);
  await phone?.close();
  await e2e?.close();
});

/** `dist/bridge …` with `stdin` written to its standard input. */
function withStdin(stdin: string, ...args: string[]) {
  return runWithStdin(e2e.env, e2e.dir, stdin, args);
}

async function cli<T>(...args: string[]): Promise<T> {
  const run = await runBridge(e2e.env, e2e.dir, [...args, "--json"]);
  expect(run).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(run.stdout) as T;
}

const reports = (messageId: string) => e2e.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);
const bodies = (prefix: string) => e2e.crm.received(prefix).map((r) => JSON.parse(r.body) as Record<string, unknown>);

/** The contact texts `text` to the phone, and the phone posts it twice, under two envelope ids, as the app is known to. */
async function contactSays(text: string, receivedAt: string): Promise<string> {
  const payload = { message: text, receivedAt };
  const first = await phone.post(hook, phone.envelope("sms:received", payload));
  expect(first.status).toBe(200);
  const { id } = JSON.parse(first.body) as { id: string; duplicate: boolean };
  const second = await phone.post(hook, phone.envelope("sms:received", payload));
  expect(second).toEqual({ status: 200, body: JSON.stringify({ id, duplicate: true }) });
  return id;
}

test("out through the phone under the job's key on the pinned device; the phone's signed sms:delivered reports delivered", async () => {
  expect((await e2e.webhook(server.url, outbound("m-1", { phone: CONTACT }))).status).toBe(200);
  const sent = await waitFor(() => [...phone.messages.values()][0], 10_000);
  const { idempotency_key: key } = await cli<{ idempotency_key: string }>("messages", "show", "m-1");
  expect(JSON.parse(phone.received("POST /messages")[0]?.body ?? "")).toEqual({
    id: key,
    deviceId: DEVICE,
    phoneNumbers: [CONTACT],
    textMessage: { text: "hello m-1" },
    ttl: 600, // ANDROID_SEND_DEADLINE
    withDeliveryReport: true,
  });
  expect(phone.received("POST /messages")).toHaveLength(1);
  expect(sent).toMatchObject({ id: key, deviceId: DEVICE, state: "Pending" });

  const res = await phone.post(hook, phone.envelope("sms:delivered", { messageId: key }));
  expect(JSON.parse(res.body)).toEqual({ ok: true, settled: true });
  await waitFor(() => reports("m-1").length > 0, 10_000);
  expect(reports("m-1")).toEqual([{ status: "delivered" }]);
  expect(e2e.gateway.sent()).toEqual([]); // nothing through Cast
});

test("the contact's reply, posted twice by the phone, reaches the location's conversation once", async () => {
  const id = await contactSays("Yes, see you at 3", "2026-11-25T09:00:00.000+08:00");
  await waitFor(() => e2e.crm.replies.inbound.length === 1, 10_000);
  expect(bodies("POST /contacts/upsert")).toEqual([{ locationId: "loc-1", phone: CONTACT }]);
  const contactId = e2e.crm.replies.contacts[0]?.id;
  expect(bodies("POST /conversations/messages/inbound")).toEqual([
    {
      type: "SMS",
      direction: "inbound",
      contactId,
      message: "Yes, see you at 3",
      altId: id,
      date: "2026-11-25T01:00:00.000Z",
      conversationProviderId: PROVIDER,
    },
  ]);
  const { replies } = await cli<{ replies: unknown[] }>("messages", "list", "--status", "posted");
  expect(replies).toEqual([expect.objectContaining({ id, location_id: "loc-1", status: "posted", routed_by: "device" })]);
  expect(e2e.crm.replies.inbound).toHaveLength(1);
});

test("STOP by reply: DND in HighLevel, the next message to the number fails without a send on the phone; START lifts it", async () => {
  const upserts = bodies("POST /contacts/upsert").length;
  await contactSays("STOP", "2026-11-25T09:05:00.000+08:00");
  await waitFor(() => e2e.crm.replies.inbound.length === 2, 10_000);
  expect(bodies("POST /contacts/upsert").slice(upserts)).toEqual([
    { locationId: "loc-1", phone: CONTACT, dndSettings: { SMS: { status: "active", message: "opted out by SMS" } } },
  ]);
  expect(e2e.crm.replies.contacts[0]?.smsDnd).toBe("active");

  expect((await e2e.webhook(server.url, outbound("m-blocked", { phone: CONTACT }))).status).toBe(200);
  await waitFor(() => reports("m-blocked").length > 0, 10_000);
  expect(reports("m-blocked")).toEqual([{ status: "failed", error: expect.objectContaining({ message: "recipient opted out" }) }]);
  expect(phone.received("POST /messages")).toHaveLength(1);

  await contactSays("start", "2026-11-25T09:10:00.000+08:00");
  await waitFor(() => e2e.crm.replies.inbound.length === 3, 10_000);
  expect(e2e.crm.replies.contacts[0]?.smsDnd).toBe("inactive");
  expect((await e2e.webhook(server.url, outbound("m-after", { phone: CONTACT }))).status).toBe(200);
  await waitFor(() => phone.received("POST /messages").length === 2, 10_000);
  expect(JSON.parse(phone.received("POST /messages")[1]?.body ?? "")).toMatchObject({ deviceId: DEVICE, textMessage: { text: "hello m-after" } });
  expect(e2e.crm.replies.inbound.map((m) => m.body.message)).toEqual(["Yes, see you at 3", "STOP", "start"]);
});
