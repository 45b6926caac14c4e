import { expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { BALANCE, SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

// GET /metrics through real HTTP, after real traffic against the fake CRM and gateway.

const TOKEN = "metrics-token-do-not-log-0123";
const start = bridgePerTest();

async function scrape(b: Bridge): Promise<string> {
  const res = await b.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample, `name{labels}`, with the labels in any order; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v) && Object.keys(found).length === Object.keys(labels).length) {
      return Number(match[3]);
    }
  }
  return undefined;
}

test("no METRICS_TOKEN: there is no /metrics (404)", async () => {
  const b = await start();
  const res = await b.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(404);
  expect(await res.json()).toEqual({ error: "not found" });
});

test("a missing or wrong bearer gets 401 as the admin API does, and the token is never logged", async () => {
  const b = await start({ env: { METRICS_TOKEN: TOKEN } });
  for (const headers of [{}, { authorization: "Bearer wrong-token-0123456789abcdef" }, { authorization: TOKEN }, { authorization: `Bearer ${ADMIN_LIKE}` }]) {
    const res = await b.fetch("/metrics", { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await res.json()).toEqual({ error: "unauthorized" });
  }
  expect(await scrape(b)).toContain("# TYPE bridge_messages_total counter");
  expect(b.logs.join("")).not.toContain(TOKEN);
});
const ADMIN_LIKE = "admin-key-do-not-log-0123456789"; // the admin key is no metrics token

test("after traffic: messages by outcome and reason, call latencies, gateway errors by kind, receipt delays", async () => {
  const b = await start({ env: { METRICS_TOKEN: TOKEN }, tuning: { sendBackoffMs: 10 } }, "loc-1");
  // The first send attempt meets a 503. Cast keeps that answer under the idempotency key and
  // replays it to the retry; the attempt after that, with a new key, goes through: three calls.
  let sends = 0;
  b.gateway.on(SEND, () => (++sends === 1 ? jsonResponse({ success: false, error: "maintenance" }, 503) : b.gateway.accept()));
  expect((await b.webhook(outbound("m-ok"))).status).toBe(200);
  expect((await b.webhook(outbound("m-bad-phone", { phone: "+15551234567" }))).status).toBe(200);
  await waitFor(async () => (await Promise.all(["m-ok", "m-bad-phone"].map((id) => b.core.jobs.get(id)))).every((found) => found?.state === "done"));

  const text = await scrape(b);
  expect(sample(text, "bridge_messages_total", { outcome: "delivered", reason: "" })).toBe(1);
  expect(sample(text, "bridge_messages_total", { outcome: "failed", reason: "invalid_phone" })).toBe(1);
  expect(sample(text, "bridge_remote_call_errors_total", { remote: "cast", operation: "send", kind: "http" })).toBe(2);
  expect(sample(text, "bridge_remote_call_seconds_count", { remote: "cast", operation: "send" })).toBe(3);
  expect(sample(text, "bridge_remote_call_seconds_sum", { remote: "cast", operation: "send" })).toBeGreaterThan(0);
  expect(sample(text, "bridge_remote_call_seconds_count", { remote: "crm", operation: "updateMessageStatus" })).toBe(2);
  expect(sample(text, "bridge_receipt_delay_seconds_count", { outcome: "delivered" })).toBe(1);
  expect(sample(text, "bridge_queue_jobs", { state: "queued" })).toBe(0);
  expect(sample(text, "bridge_queue_oldest_waiting_seconds")).toBe(0);
  // Node's own process metrics come along.
  expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
});

test("queue gauges: depth by state and the oldest waiting message's age", async () => {
  let now = Date.parse("2026-03-01T08:00:00Z");
  const b = await start({ env: { METRICS_TOKEN: TOKEN }, worker: false, now: () => now }, "loc-1");
  for (const id of ["q-1", "q-2"]) expect((await b.webhook(outbound(id))).status).toBe(200);
  now += 90_000;
  expect((await b.webhook(outbound("q-3"))).status).toBe(200);
  now += 5_000;

  const text = await scrape(b);
  expect(sample(text, "bridge_queue_jobs", { state: "queued" })).toBe(3);
  expect(sample(text, "bridge_queue_jobs", { state: "sending" })).toBe(0);
  expect(sample(text, "bridge_queue_oldest_waiting_seconds")).toBe(95);
});

test("held keys and the balance per key (masked) from the balance calls", async () => {
  const b = await start({ env: { METRICS_TOKEN: TOKEN } }, "loc-1");
  let credits = 0;
  b.gateway.on(SEND, () => (credits > 0 ? b.gateway.accept() : jsonResponse({ success: false, error: "Insufficient credits" }, 402)));
  b.gateway.on(BALANCE, () => jsonResponse({ success: true, credits, currency: "PHP" }));
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.core.delivery.holds.list().length === 1);
  await b.core.clients.cast.balance(GLOBAL_SMS_KEY); // as serve reads each key's balance every few minutes

  const held = await scrape(b);
  expect(sample(held, "bridge_held_keys")).toBe(1);
  expect(sample(held, "bridge_gateway_balance_credits", { key: "global-sms-k..." })).toBe(0);
  expect(held).not.toContain("global-sms-key-do-not-log");

  credits = 750;
  await waitFor(() => b.crm.statusReports().length === 1, 10_000);
  await b.core.clients.cast.balance(GLOBAL_SMS_KEY);
  const after = await scrape(b);
  expect(sample(after, "bridge_held_keys")).toBe(0);
  expect(sample(after, "bridge_gateway_balance_credits", { key: "global-sms-k..." })).toBe(750);
});

test("opt-outs: the numbers on the locations' lists, by who put them there, read at each scrape", async () => {
  const b = await start({ env: { METRICS_TOKEN: TOKEN } });
  const before = await scrape(b);
  expect(sample(before, "bridge_opt_outs", { by: "reply" })).toBe(0);
  expect(sample(before, "bridge_opt_outs", { by: "operator" })).toBe(0);

  await b.core.optOutList.add("loc-1", "+639171234567", "reply");
  await b.core.optOutList.add("loc-1", "+639181234567", "operator");
  await b.core.optOutList.add("loc-2", "+639181234567", "operator");
  const after = await scrape(b);
  expect(sample(after, "bridge_opt_outs", { by: "reply" })).toBe(1);
  expect(sample(after, "bridge_opt_outs", { by: "operator" })).toBe(2);
});
