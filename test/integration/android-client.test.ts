import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, expect, test } from "vitest";
import { createPhoneClient, phoneStatus } from "../../src/core/clients/android.ts";
import { GatewayError } from "../../src/errors.ts";
import { closedPort } from "../helpers/http.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// The phone's client against the fake phone: what it sends, and how each answer is read.
let phone: FakePhone;
beforeEach(async () => (phone = await startFakePhone()));
afterEach(() => phone.close());

const client = (password = PHONE_PASSWORD) => createPhoneClient({ url: phone.url, user: PHONE_USER, password, deviceId: DEVICE }, { timeoutMs: 2000 });

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  const error: unknown = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

test("send: POST /messages with the job's id, the pinned device, E.164, its ttl in seconds, delivery reports; 202 → the message", async () => {
  const sent = await client().send("0b7f3a52-6c1e-4f0e-9a57-0d7b8c1e2f30", "+639171234567", "hello", 600);
  expect(sent).toEqual({ message: { id: "0b7f3a52-6c1e-4f0e-9a57-0d7b8c1e2f30", state: "Pending", reason: "" }, replayed: false });
  const [req] = phone.received("POST /messages");
  expect(JSON.parse(req!.body)).toEqual({
    id: "0b7f3a52-6c1e-4f0e-9a57-0d7b8c1e2f30",
    deviceId: DEVICE,
    phoneNumbers: ["+639171234567"],
    textMessage: { text: "hello" },
    ttl: 600,
    withDeliveryReport: true,
  });
});

test("a 409 (the id was taken before) reads the state back and sends nothing again", async () => {
  await client().send("job-1", "+639171234567", "hello", 600);
  phone.advance("job-1", "Sent");
  const again = await client().send("job-1", "+639171234567", "hello", 600);
  expect(again).toEqual({ message: { id: "job-1", state: "Sent", reason: "" }, replayed: true });
  expect(phone.received("GET /messages/job-1")).toHaveLength(1);
  expect(phone.messages.size).toBe(1);
});

test.each([
  [400, "rejected"],
  [401, "key_refused"],
  [403, "key_refused"],
  [503, "unknown"],
  [500, "unknown"],
])("a %i to the send is %s", async (status, kind) => {
  phone.answerNextSend(status);
  const error = await failure(client().send("job-1", "+639171234567", "hello", 600));
  expect(error).toMatchObject({ failure: kind, httpStatus: status });
});

test("wrong credentials: 401 names what to check", async () => {
  const error = await failure(client("wrong").send("job-1", "+639171234567", "hello", 600));
  expect(error.failure).toBe("key_refused");
  expect(error.message).toContain("check the location's android user and password");
});

test("no connection: unreachable (nothing left)", async () => {
  const port = await closedPort();
  const away = createPhoneClient({ url: `http://127.0.0.1:${port}`, user: "u", password: "p", deviceId: DEVICE });
  expect((await failure(away.send("job-1", "+639171234567", "hello", 600))).failure).toBe("unreachable");
});

test("state, health, webhooks; no cancel call, as the API has none", async () => {
  const c = client();
  await c.send("job-1", "+639171234567", "hello", 600);
  phone.advance("job-1", "Failed", "RESULT_ERROR_LIMIT_EXCEEDED");
  expect(await c.state("job-1")).toEqual({ id: "job-1", state: "Failed", reason: "RESULT_ERROR_LIMIT_EXCEEDED" });
  expect(await failure(c.state("nope"))).toMatchObject({ failure: "not_found", httpStatus: 404 });
  expect("cancel" in c).toBe(false);
  expect(await c.health()).toBe("pass");
  await c.register({ id: "bridge-sms-sent", url: "https://bridge.test/webhooks/android", event: "sms:sent" });
  expect(await c.webhooks()).toEqual([{ id: "bridge-sms-sent", url: "https://bridge.test/webhooks/android", event: "sms:sent", deviceId: DEVICE }]);
});

test.each([
  ["Pending", "pending"],
  ["Processed", "pending"],
  ["Sent", "sent"],
  ["Delivered", "delivered"],
  ["Failed", "failed"],
])("the phone's %s is %s", (state, status) => {
  expect(phoneStatus({ id: "x", state, reason: "" }).status).toBe(status);
});

test.each([
  ["TTL expired", { status: "failed", dlrStatus: "PHONE_NOT_SENT", errorMessage: "TTL expired" }],
  ["RESULT_ERROR_LIMIT_EXCEEDED", { status: "unsent", dlrStatus: "", errorMessage: "RESULT_ERROR_LIMIT_EXCEEDED" }],
  [
    "Send result: RESULT_ERROR_LIMIT_EXCEEDED (Failed because we reached the sending queue limit)",
    { status: "unsent", dlrStatus: "", errorMessage: "Send result: RESULT_ERROR_LIMIT_EXCEEDED (Failed because we reached the sending queue limit)" },
  ],
])("Failed proving nothing left: %s", (reason, status) => {
  // The app's words (MessagesService.kt): "TTL expired" for a message past its ttl, never sent; "Send result: " and
  // SmsManager's code when Android refused to send it (fixtures/android/sms-failed.json: the bare code).
  expect(phoneStatus({ id: "x", state: "Failed", reason })).toEqual(status);
});

test("Failed carries the phone's reason", () => {
  expect(phoneStatus({ id: "x", state: "Failed", reason: "RESULT_ERROR_NO_SERVICE" })).toEqual({
    status: "failed",
    dlrStatus: "PHONE_FAILED",
    errorMessage: "RESULT_ERROR_NO_SERVICE",
  });
});

test("cloud mode: the base's path (/3rdparty/v1) is kept before each call's", async () => {
  // docs/services/android-gateway-api.md, "Modes and auth": cloud is https://api.sms-gate.app/3rdparty/v1, the same paths as local.
  const paths: string[] = [];
  const cloud = createServer((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" }).end("[]");
  });
  await new Promise<void>((resolve) => cloud.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(cloud.address() as AddressInfo).port}/3rdparty/v1`;
    await createPhoneClient({ url, user: "u", password: "p", deviceId: DEVICE }).webhooks();
  } finally {
    cloud.close();
  }
  expect(paths).toEqual(["GET /3rdparty/v1/webhooks"]);
});
