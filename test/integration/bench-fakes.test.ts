import { afterEach, describe, expect, test } from "vitest";
import { startFakeCrm, startFakeGateway } from "../../bench/lib/fakes.mjs";
import { fixture } from "../helpers/fixtures.ts";
import { expectCastRouteErrors, shapeOf } from "../helpers/shape.ts";

/**
 * The benchmark's own fake Cast (bench/lib/fakes.mjs, plain node:http to cost little CPU)
 * answers in Cast's documented shapes (../shared/fixtures/cast, docs/services/cast-api.md), as the tests'
 * fake does (cast-contract.test.ts): a benchmark against answers Cast never gives measures
 * nothing about bridge with Cast. Started as bench/run.mjs starts it.
 */

const KEY = "bench-sms-api-key-0123456789";
let gateway: Awaited<ReturnType<typeof startFakeGateway>> | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

/** The fake as bench/run.mjs starts it; `dlrOf(text)`: the carrier's code for a message, none yet when undefined. */
async function start(dlrOf: (text: string) => string | undefined = () => "DELIVRD", options: Parameters<typeof startFakeGateway>[0] = {}) {
  gateway = await startFakeGateway({
    ...options,
    receiptOf: (text) => {
      const dlr = dlrOf(text);
      return dlr ? { delayMs: 0, dlr } : { delayMs: 86_400_000, dlr: "DELIVRD" };
    },
  });
  return gateway;
}

async function call(path: string, init: RequestInit = {}, key = KEY) {
  const res = await fetch(gateway!.url + path, { ...init, headers: { "x-api-key": key, "content-type": "application/json", ...init.headers } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const send = (message = "Hello!", headers: Record<string, string> = {}, key = KEY) =>
  call("/api/v1/sms/send", { method: "POST", headers, body: JSON.stringify({ to: "09171234567", message }) }, key);

/** The status call's example without `absent`: Cast's optional fields, "only present when applicable". */
function statusExample(absent: string[]) {
  const example: Record<string, unknown> = { ...fixture("cast", "status-200.json") };
  for (const field of absent) delete example[field];
  return example;
}

test("send: send-200.json, a CAST id", async () => {
  await start();
  const res = await send();
  expect(res.status).toBe(200);
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "send-200.json")));
  expect(res.body.message_id).toMatch(/^CAST/);
});

test("a repeated X-Idempotency-Key: the first answer again, with X-Idempotent-Replay: true, and nothing sent", async () => {
  const fake = await start();
  const first = await send("Hello!", { "x-idempotency-key": "k-1" });
  const again = await send("Hello!", { "x-idempotency-key": "k-1" });
  expect(first.headers.get("x-idempotent-replay")).toBeNull();
  expect(again.headers.get("x-idempotent-replay")).toBe("true");
  expect(again).toMatchObject({ status: 200, body: first.body });
  expect(fake.accepted).toHaveLength(1);
  expect(fake.stats).toMatchObject({ replays: 1, duplicates: 0 });
});

test("status delivered: status-200.json", async () => {
  await start();
  const res = await call(`/api/v1/sms/status/${String((await send()).body.message_id)}`);
  expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "status-200.json")));
  expect(res.body).toMatchObject({ status: "delivered", dlr_status: "DELIVRD" });
});

test("status before the receipt: status-200.json without dlr_status and delivered_at", async () => {
  await start(() => undefined);
  const res = await call(`/api/v1/sms/status/${String((await send()).body.message_id)}`);
  expect(shapeOf(res.body)).toEqual(shapeOf(statusExample(["dlr_status", "delivered_at"])));
  expect(res.body.status).toBe("sent");
});

test.each([
  { dlr: "ACCEPTD", status: "pending" },
  { dlr: "UNDELIV", status: "undelivered" },
  { dlr: "REJECTD", status: "undelivered" },
  { dlr: "EXPIRED", status: "undelivered" },
])("status $status ($dlr): with dlr_status, without delivered_at (no handset confirmation)", async ({ dlr, status }) => {
  await start(() => dlr);
  const res = await call(`/api/v1/sms/status/${String((await send()).body.message_id)}`);
  expect(shapeOf(res.body)).toEqual(shapeOf(statusExample(["delivered_at"])));
  expect(res.body).toMatchObject({ status, dlr_status: dlr });
});

test("status of an unknown id, or of another key's message: 404 NOT_FOUND in the error envelope", async () => {
  await start();
  const { message_id } = (await send()).body;
  for (const res of [await call("/api/v1/sms/status/CASTnosuchmessage"), await call(`/api/v1/sms/status/${String(message_id)}`, {}, "another-key")]) {
    expect(res.status).toBe(404);
    expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "error-402.json")));
    expect(res.body.error_code).toBe("NOT_FOUND");
  }
});

test("logs: logs-200.json, newest first; an undelivered entry has dlr_status without delivered_at", async () => {
  const example = fixture<{ logs: Record<string, unknown>[] }>("cast", "logs-200.json");
  await start((text) => ({ delivered: "DELIVRD", refused: "REJECTD" })[text]);
  for (const text of ["delivered", "refused", "late"]) await send(text);

  const { logs, ...envelope } = (await call("/api/v1/sms/logs?limit=500")).body as { logs: Record<string, unknown>[] };
  const { logs: _, ...exampleEnvelope } = example;
  expect(shapeOf(envelope)).toEqual(shapeOf(exampleEnvelope));
  expect(logs.map((entry) => entry.message)).toEqual(["late", "refused", "delivered"]);
  const [late, refused, delivered] = logs;
  const { delivered_at: _at, ...undelivered } = example.logs[1]!;
  expect(shapeOf(late)).toEqual(shapeOf(example.logs[0]));
  expect(shapeOf(refused)).toEqual(shapeOf(undelivered));
  expect(shapeOf(delivered)).toEqual(shapeOf(example.logs[1]));
  expect(refused).toMatchObject({ status: "sent", dlr_status: "REJECTD" });
  expect(delivered!.id).not.toBe(delivered!.smpp_message_id);
});

test("balance and sender IDs (what serve and doctor ask at start-up): balance-200.json, sender-ids-200.json", async () => {
  await start();
  const balance = await call("/api/v1/account/balance");
  expect(balance.status).toBe(200);
  expect(shapeOf(balance.body)).toEqual(shapeOf(fixture("cast", "balance-200.json")));
  const senders = await call("/api/v1/account/sender-ids");
  expect(senders.status).toBe(200);
  expect(shapeOf(senders.body)).toEqual(shapeOf(fixture("cast", "sender-ids-200.json")));
});

test("the unsubscribed list (read before a key's sends): unsubscribed-200.json without entries", async () => {
  await start();
  const res = await call("/api/v1/account/unsubscribed");
  expect(res.status).toBe(200);
  expect(shapeOf(res.body)).toEqual(shapeOf({ ...fixture<Record<string, unknown>>("cast", "unsubscribed-200.json"), data: [] }));
});

test("a 429: error-429.json, with Retry-After in whole seconds", async () => {
  await start(undefined, { address: { ratePerSec: 0.001, burst: 1 } });
  await call("/api/v1/account/balance");
  const res = await call("/api/v1/account/balance");
  expect(res.status).toBe(429);
  expect(res.body).toEqual(fixture("cast", "error-429.json"));
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
});

test("a path Cast has no endpoint for: 404 NOT_FOUND, a wrong method: 405 METHOD_NOT_ALLOWED, in the envelope of error-402.json", async () => {
  await start();
  await expectCastRouteErrors(call);
});

describe("the fake HighLevel's replies routes", () => {
  let crm: Awaited<ReturnType<typeof startFakeCrm>> | undefined;
  afterEach(async () => {
    await crm?.close();
    crm = undefined;
  });

  async function post(path: string, body: unknown) {
    const res = await fetch(crm!.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  test("contact upsert: contacts-upsert-200.json; the same phone of the location is the same contact, not new", async () => {
    crm = await startFakeCrm();
    const first = await post("/contacts/upsert", { locationId: "loc-bench", phone: "+639171234567" });
    expect(first.status).toBe(200);
    expect(shapeOf(first.body)).toEqual(shapeOf(fixture("highlevel", "contacts-upsert-200.json")));
    expect(first.body).toMatchObject({ new: true, contact: { locationId: "loc-bench", phone: "+639171234567", dnd: false } });
    const again = await post("/contacts/upsert", { locationId: "loc-bench", phone: "+639171234567" });
    expect(again.body).toMatchObject({ new: false, contact: { id: first.body.contact.id } });
    const other = await post("/contacts/upsert", { locationId: "loc-bench", phone: "+639180000000" });
    expect(other.body.contact.id).not.toBe(first.body.contact.id);
  });

  test("inbound message: inbound-message-200.json, counted by altId each time it comes", async () => {
    crm = await startFakeCrm();
    const message = { type: "SMS", direction: "inbound", contactId: "contact-1", message: "yes", altId: "in-1", conversationProviderId: "provider-bench" };
    const res = await post("/conversations/messages/inbound", message);
    expect(res.status).toBe(200);
    expect(shapeOf(res.body)).toEqual(shapeOf(fixture("highlevel", "inbound-message-200.json")));
    expect(res.body).toMatchObject({ contactId: "contact-1", message: "yes" });
    await post("/conversations/messages/inbound", message);
    await post("/conversations/messages/inbound", { ...message, altId: "in-2" });
    expect(crm.inbound.get("in-1")?.posts).toBe(2);
    expect(crm.inbound.get("in-2")?.posts).toBe(1);
  });
});
