import { afterEach, beforeEach, expect, test } from "vitest";
import { fixture } from "../helpers/fixtures.ts";
import { castError, startFakeGateway, type FakeGateway } from "../helpers/fake-gateway.ts";

/**
 * The fake Cast answers in Cast's documented shapes (../shared/fixtures/cast, CAST_API.md),
 * so a test passing against it says something about Cast: each answer here has the
 * example's field names and types, and lacks the fields the example lacks.
 */

const KEY = "cast_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
let gateway: FakeGateway;
beforeEach(async () => (gateway = await startFakeGateway()));
afterEach(() => gateway.close());

/** What an answer is made of: field names, and each value's kind (an ISO time, an integer, …). */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) {
    const shapes = value.map(shapeOf);
    for (const s of shapes) expect(s, "every element of a list has one shape").toEqual(shapes[0]);
    return shapes.slice(0, 1);
  }
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v)]));
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(value)) return "ISO time, to the second";
  return typeof value;
}

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
