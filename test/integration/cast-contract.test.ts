import { afterEach, beforeEach, expect, test } from "vitest";
import { fixture } from "../helpers/fixtures.ts";
import { expectCastRouteErrors, shapeOf } from "../helpers/shape.ts";
import { castError, SEND, startFakeGateway, type FakeGateway } from "../helpers/fake-gateway.ts";

/**
 * The fake Cast answers in Cast's documented shapes (../shared/fixtures/cast, docs/services/cast-api.md),
 * so a test passing against it says something about Cast: each answer here has the
 * example's field names and types, and lacks the fields the example lacks.
 */

const KEY = "cast_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
let gateway: FakeGateway;
beforeEach(async () => (gateway = await startFakeGateway()));
afterEach(() => gateway.close());

async function call(path: string, init: RequestInit = {}, key = KEY) {
  const res = await fetch(gateway.url + path, { ...init, headers: { "x-api-key": key, "content-type": "application/json", ...init.headers } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const send = (key = KEY, to = "09171234567") => call("/api/v1/sms/send", { method: "POST", body: JSON.stringify({ to, message: "Hello!", sender_id: "MYAPP" }) }, key);

test("send: send-200.json", async () => {
  const res = await send();
  expect(res.status).toBe(200);
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "send-200.json")));
});

test("send with a sandbox key (cast_test_…): send-sandbox-200.json, a SANDBOX_ id", async () => {
  const res = await send("cast_test_0123456789abcdef");
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "send-sandbox-200.json")));
  expect(res.body).toMatchObject({ sandbox: true, message_id: expect.stringMatching(/^SANDBOX_/) });
});

test("status of a delivered message: status-200.json", async () => {
  const { body } = await send();
  const res = await call(`/api/v1/sms/status/${String(body.message_id)}`);
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "status-200.json")));
});

test("status before the receipt: status-200.json without dlr_status and delivered_at", async () => {
  gateway.receipts(() => ({ status: "sent" }));
  const { body } = await send();
  const res = await call(`/api/v1/sms/status/${String(body.message_id)}`);
  const { dlr_status: _d, delivered_at: _a, ...before } = fixture("cast", "status-200.json");
  expect(shapeOf(res.body)).toEqual(shapeOf(before));
  expect(res.body.status).toBe("sent");
});

/**
 * The status call's example without `absent` and with the `extra` fields. Cast's documentation
 * names three optional fields, "only present when applicable": `dlr_status` (the carrier's
 * code), `delivered_at` ("timestamp of handset confirmation") and `error_message` ("SMPP error
 * detail if status is failed"); none other may appear.
 */
function statusExample(absent: ("dlr_status" | "delivered_at")[], extra: { error_message?: string } = {}) {
  const example: Record<string, unknown> = { ...fixture("cast", "status-200.json"), ...extra };
  for (const field of absent) delete example[field];
  return example;
}

const statusOf = async (messageId: unknown) => call(`/api/v1/sms/status/${String(messageId)}`);

test.each([
  { said: { status: "pending", dlr_status: "ACCEPTD" }, dlr: "ACCEPTD" },
  { said: { status: "undelivered", dlr_status: "UNDELIV" }, dlr: "UNDELIV" },
  { said: { status: "undelivered", dlr_status: "REJECTD" }, dlr: "REJECTD" },
  { said: { status: "undelivered", dlr_status: "EXPIRED" }, dlr: "EXPIRED" },
])("status $said.status ($dlr): status-200.json with dlr_status, without delivered_at (no handset confirmation)", async ({ said, dlr }) => {
  gateway.receipts(() => said);
  const res = await statusOf((await send()).body.message_id);
  expect(shapeOf(res.body)).toEqual(shapeOf(statusExample(["delivered_at"])));
  expect(res.body).toMatchObject({ status: said.status, dlr_status: dlr });
});

test("status failed: status-200.json without a receipt, with error_message", async () => {
  gateway.receipts(() => ({ status: "failed", error_message: "route unavailable" }));
  const res = await statusOf((await send()).body.message_id);
  expect(shapeOf(res.body)).toEqual(shapeOf(statusExample(["dlr_status", "delivered_at"], { error_message: "SMPP error detail" })));
  expect(res.body).toMatchObject({ status: "failed", error_message: "route unavailable" });
});

test("error_message comes with status failed only", async () => {
  gateway.receipts(() => ({ status: "undelivered", dlr_status: "UNDELIV", error_message: "not for this status" }));
  const res = await statusOf((await send()).body.message_id);
  expect(res.body).not.toHaveProperty("error_message");
});

test("status of a sandbox send: sent, no receipt ever; another key's message is not found", async () => {
  const sandboxKey = "cast_test_0123456789abcdef";
  const { message_id } = (await send(sandboxKey)).body;
  const res = await call(`/api/v1/sms/status/${String(message_id)}`, {}, sandboxKey);
  expect(shapeOf(res.body)).toEqual(shapeOf(statusExample(["dlr_status", "delivered_at"])));
  expect(res.body.status).toBe("sent");
  expect((await statusOf(message_id)).status).toBe(404);
});

test("logs: an undelivered entry has dlr_status without delivered_at; a failed submission is status failed", async () => {
  const example = fixture<{ logs: Record<string, unknown>[] }>("cast", "logs-200.json");
  gateway.receipts((message) => (message === "refused" ? { status: "undelivered", dlr_status: "REJECTD" } : { status: "failed", error_message: "route unavailable" }));
  await call("/api/v1/sms/send", { method: "POST", body: JSON.stringify({ to: "09171234568", message: "refused" }) });
  await call("/api/v1/sms/send", { method: "POST", body: JSON.stringify({ to: "09171234569", message: "lost" }) });

  const [failed, refused] = (await call("/api/v1/sms/logs")).body.logs as Record<string, unknown>[];
  const { delivered_at: _, ...undelivered } = example.logs[1]!;
  expect(shapeOf(refused)).toEqual(shapeOf(undelivered));
  expect(refused).toMatchObject({ status: "sent", dlr_status: "REJECTD" });
  expect(shapeOf(failed)).toEqual(shapeOf(example.logs[0]));
  expect(failed).toMatchObject({ status: "failed" });
  expect((await call("/api/v1/sms/logs?status=failed")).body.logs).toEqual([failed]);
});

const sendWith = (key: string) =>
  call("/api/v1/sms/send", { method: "POST", headers: { "x-idempotency-key": key }, body: JSON.stringify({ to: "09171234567", message: "Hello!" }) });

test("a repeated X-Idempotency-Key: the first answer again, with X-Idempotent-Replay: true, and nothing sent", async () => {
  const first = await sendWith("k-1");
  const again = await sendWith("k-1");
  expect(first.headers.get("x-idempotent-replay")).toBeNull();
  expect(again.headers.get("x-idempotent-replay")).toBe("true");
  expect(again).toMatchObject({ status: 200, body: first.body });
  expect(gateway.sent()).toHaveLength(1);
});

test("a repeated X-Idempotency-Key after an error: the error again, replayed, as Cast keeps \"the original response\"", async () => {
  gateway.on(SEND, () => castError(503, "SERVICE_UNAVAILABLE", "SMPP pool not connected"));
  const refused = await sendWith("k-2");
  const replayed = await sendWith("k-2");
  expect(replayed.headers.get("x-idempotent-replay")).toBe("true");
  expect(replayed).toMatchObject({ status: 503, body: refused.body });
  expect(shapeOf(replayed.body)).toEqual(shapeOf(fixture("cast", "error-402.json")));
  expect(gateway.sent()).toHaveLength(1);
});

test("a path Cast has no endpoint for: 404 NOT_FOUND, a wrong method: 405 METHOD_NOT_ALLOWED, in the envelope of error-402.json", async () => {
  await expectCastRouteErrors(call);
});

test("logs: logs-200.json, an entry without its receipt like the first, a delivered one like the second", async () => {
  const example = fixture<{ logs: unknown[] }>("cast", "logs-200.json");
  gateway.receipts((message) => (message === "late" ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));
  await send();
  await call("/api/v1/sms/send", { method: "POST", body: JSON.stringify({ to: "09171234568", message: "late" }) });

  const res = await call("/api/v1/sms/logs?limit=500");
  const { logs, ...envelope } = res.body as { logs: Record<string, unknown>[] };
  const { logs: _, ...exampleEnvelope } = example;

  expect(shapeOf(envelope)).toEqual(shapeOf(exampleEnvelope));
  expect(logs.map((entry) => shapeOf(entry))).toEqual([shapeOf(example.logs[0]), shapeOf(example.logs[1])]);
  // Cast's row number is not the send's id: that is smpp_message_id.
  expect(logs[1]).toMatchObject({ status: "sent", dlr_status: "DELIVRD", smpp_message_id: expect.stringMatching(/./) });
  expect(logs[1]!.id).not.toBe(logs[1]!.smpp_message_id);
});

test("logs: newest first, paged with limit and offset; a short page is the last", async () => {
  for (let i = 0; i < 5; i++) await send();
  const first = await call("/api/v1/sms/logs?limit=2&offset=0");
  const third = await call("/api/v1/sms/logs?limit=2&offset=4");
  const ids = (page: { body: Record<string, unknown> }) => (page.body.logs as { id: number }[]).map((e) => e.id);
  expect(ids(first)).toHaveLength(2);
  expect(ids(first)).toEqual([...ids(first)].sort((a, b) => b - a));
  expect(ids(third)).toHaveLength(1);
  expect(ids(third)[0]).toBeLessThan(ids(first)[1]!);
});

test("balance and sender IDs: balance-200.json, sender-ids-200.json", async () => {
  expect(shapeOf((await call("/api/v1/account/balance")).body)).toEqual(shapeOf(fixture("cast", "balance-200.json")));
  expect(shapeOf((await call("/api/v1/account/sender-ids")).body)).toEqual(shapeOf(fixture("cast", "sender-ids-200.json")));
});

test("unsubscribed: unsubscribed-200.json, each entry like its one", async () => {
  const example = fixture("cast", "unsubscribed-200.json");
  gateway.unsubscribe([{ phone: "+639171234567", sender_id: "MYAPP" }]);
  expect((await call("/api/v1/account/unsubscribed")).body).toEqual(example);
  gateway.unsubscribe([]);
  expect(shapeOf((await call("/api/v1/account/unsubscribed")).body)).toEqual(shapeOf({ ...example, data: [] }));
});

test("a 429: error-429.json, with Retry-After in whole seconds", async () => {
  gateway.limitRequests(1, 1);
  await call("/api/v1/account/balance");
  const res = await call("/api/v1/account/balance");
  expect(res.status).toBe(429);
  expect(res.body).toEqual(fixture("cast", "error-429.json"));
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
});

test("an unknown message id, and every error a test builds: the error envelope of error-402.json", async () => {
  const unknown = await call("/api/v1/sms/status/CASTnosuchmessage");
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ error_code: "NOT_FOUND" });
  const built = castError(402, "INSUFFICIENT_CREDITS", "insufficient credits: need 2");
  for (const body of [unknown.body, await built.json()]) expect(shapeOf(body)).toEqual(shapeOf(fixture("cast", "error-402.json")));
});
