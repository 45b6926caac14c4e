import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, expect, test } from "vitest";
import { fixture } from "../helpers/fixtures.ts";
import { shapeOf } from "../helpers/shape.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

/**
 * The fake phone answers in the app's documented shapes (../shared/fixtures/android,
 * docs/services/android-gateway-api.md), so a test passing against it says something about the phone.
 */
let phone: FakePhone;
beforeEach(async () => (phone = await startFakePhone()));
afterEach(() => phone.close());

const AUTH = `Basic ${Buffer.from(`${PHONE_USER}:${PHONE_PASSWORD}`).toString("base64")}`;

async function call(method: string, path: string, body?: unknown, auth = AUTH) {
  const res = await fetch(phone.url + path, { method, headers: { authorization: auth, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

const message = (id: string) => ({ id, deviceId: DEVICE, phoneNumbers: ["+639171234567"], textMessage: { text: "hi" }, withDeliveryReport: true });

test("send: 202 in send-202.json's shape, with a Location", async () => {
  const res = await call("POST", "/messages", message("job-1"));
  expect(res.status).toBe(202);
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("android", "send-202.json")));
  expect(res.body).toMatchObject({ id: "job-1", deviceId: DEVICE, state: "Pending" });
  expect(res.headers.get("location")).toBe("/messages/job-1");
});

test("a reused id on the same device: 409 with the app's {message} error, nothing sent again", async () => {
  await call("POST", "/messages", message("job-1"));
  const again = await call("POST", "/messages", message("job-1"));
  expect(again.status).toBe(409);
  expect(Object.keys(again.body ?? {})).toEqual(["message"]);
  expect(phone.messages.size).toBe(1);
});

test("GET /messages/{id}: the same shape; 404 for an unknown id", async () => {
  await call("POST", "/messages", message("job-1"));
  phone.advance("job-1", "Sent");
  const res = await call("GET", "/messages/job-1");
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("android", "send-202.json")));
  expect(res.body).toMatchObject({ state: "Sent", recipients: [{ phoneNumber: "+639171234567", state: "Sent" }] });
  expect((await call("GET", "/messages/nope")).status).toBe(404);
});

test("a failed message's recipient carries `error`, as client-ts's RecipientState does", async () => {
  // android-sms-gateway@3.0.0 dist/index.d.ts: "export interface RecipientState { phoneNumber: string;
  // state: ProcessState; /** An optional error message, if the recipient failed to receive the message. */
  // error?: string | null; }"
  await call("POST", "/messages", message("job-1"));
  phone.advance("job-1", "Failed", "RESULT_ERROR_LIMIT_EXCEEDED");
  const res = await call("GET", "/messages/job-1");
  expect(res.body?.recipients).toEqual([{ phoneNumber: "+639171234567", state: "Failed", error: "RESULT_ERROR_LIMIT_EXCEEDED" }]);
});

test("wrong credentials: 401", async () => {
  expect((await call("POST", "/messages", message("job-1"), "Basic eDp5")).status).toBe(401);
  expect(phone.messages.size).toBe(0);
});

test("webhooks: registered under an id (the same id replaces), listed", async () => {
  await call("POST", "/webhooks", { id: "bridge-sms-received", url: "https://a.test/webhooks/android", event: "sms:received", deviceId: DEVICE });
  await call("POST", "/webhooks", { id: "bridge-sms-received", url: "https://b.test/webhooks/android", event: "sms:received", deviceId: DEVICE });
  const res = await fetch(`${phone.url}/webhooks`, { headers: { authorization: AUTH } });
  expect(await res.json()).toEqual([{ id: "bridge-sms-received", url: "https://b.test/webhooks/android", event: "sms:received", deviceId: DEVICE }]);
});

test("posted webhooks: the fixtures' envelopes, signed over raw body + X-Timestamp", async () => {
  const got: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => (got.push({ headers: req.headers, body }), res.end()));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    for (const event of ["sms:received", "sms:delivered", "sms:failed"] as const) await phone.post(url, phone.envelope(event));
  } finally {
    server.close();
  }
  const names = ["sms-received.json", "sms-delivered.json", "sms-failed.json"];
  got.forEach(({ headers, body }, i) => {
    expect(shapeOf(JSON.parse(body))).toEqual(shapeOf(fixture("android", names[i]!)));
    const expected = createHmac("sha256", SIGNING_KEY).update(body + String(headers["x-timestamp"])).digest("hex");
    expect(headers["x-signature"]).toBe(expected);
  });
});

test("no cancel call: DELETE /messages/{id} finds no route, and the message is left as it was", async () => {
  // docs/services/android-gateway-api.md: "**There is no cancel call**: the server's third-party routes are
  // `POST /messages`, `GET /messages/{id}` and `POST /messages/inbox/export` only".
  await call("POST", "/messages", message("job-1"));
  expect((await call("DELETE", "/messages/job-1")).status).toBe(404);
  expect((await call("GET", "/messages/job-1")).body).toMatchObject({ state: "Pending" });
});

test("ttl: a message still Pending past it ends Failed, \"TTL expired\", and is never sent; a phone that is off keeps it", async () => {
  // docs/services/android-gateway-api.md: "the deadline is the `ttl` (or `validUntil`) sent with the message ...: past it
  // the message is not sent; read its state with `GET` to know how it ended". The app (MessagesService.kt,
  // sendMessage): `if (request.params.validUntil?.before(Date()) == true) { updateState(..., Failed, "TTL expired")`.
  const clock = { now: Date.now() };
  await phone.close();
  phone = await startFakePhone({ now: () => clock.now });
  await call("POST", "/messages", { ...message("job-1"), ttl: 600 });
  await call("POST", "/messages", { ...message("job-2"), ttl: 600 });
  clock.now += 599_000;
  expect((await call("GET", "/messages/job-1")).body).toMatchObject({ state: "Pending" });
  phone.asleep();
  clock.now += 2_000;
  expect((await call("GET", "/messages/job-1")).body).toMatchObject({ state: "Pending" });
  phone.asleep(false);
  expect((await call("GET", "/messages/job-1")).body).toMatchObject({ state: "Failed", recipients: [{ state: "Failed", error: "TTL expired" }] });
  phone.advance("job-2", "Processed"); // handed to Android before its ttl: the app does not expire it
  expect((await call("GET", "/messages/job-2")).body).toMatchObject({ state: "Processed" });
});

test("past its send limit a message ends Failed with RESULT_ERROR_LIMIT_EXCEEDED on its recipient", async () => {
  // docs/services/android-gateway-api.md: "carriers allow roughly 30-200 SMS an hour per SIM before `RESULT_ERROR_LIMIT_EXCEEDED`";
  // fixtures/android/sms-failed.json: `"reason": "RESULT_ERROR_LIMIT_EXCEEDED"`.
  phone.limit(1);
  await call("POST", "/messages", message("job-1"));
  const second = await call("POST", "/messages", message("job-2"));
  expect(second).toMatchObject({ status: 202, body: { state: "Pending" } }); // taken; Android refuses it after
  expect((await call("GET", "/messages/job-1")).body).toMatchObject({ state: "Pending" });
  expect((await call("GET", "/messages/job-2")).body).toMatchObject({
    state: "Failed",
    recipients: [{ phoneNumber: "+639171234567", state: "Failed", error: fixture<{ payload: { reason: string } }>("android", "sms-failed.json").payload.reason }],
  });
  expect(phone.events("job-2").map((e) => e.payload.reason)).toEqual(["RESULT_ERROR_LIMIT_EXCEEDED"]);
});

test("a multipart message's status events come once per part, each in the fixture's shape", async () => {
  // docs/services/android-gateway-api.md, Webhooks: "`sms:delivered` (once per part)".
  await call("POST", "/messages", { ...message("job-1"), textMessage: { text: "x".repeat(400) } }); // 3 parts of 153
  phone.advance("job-1", "Delivered");
  const events = phone.events("job-1");
  expect(events).toHaveLength(3);
  for (const e of events) {
    expect(shapeOf(e)).toEqual(shapeOf(fixture("android", "sms-delivered.json")));
    expect(e).toMatchObject({ event: "sms:delivered", deviceId: DEVICE, payload: { messageId: "job-1" } });
  }
  expect(new Set(events.map((e) => e.id)).size).toBe(3);
  await call("POST", "/messages", message("job-2"));
  phone.advance("job-2", "Sent");
  expect(phone.events("job-2").map((e) => e.event)).toEqual(["sms:sent"]);
});
