import { createConnection, createServer, type Server } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { castError, SEND } from "../helpers/fake-gateway.ts";
import { closedPort } from "../helpers/http.ts";

/**
 * A location's API key or approval changes while a message waits for its next attempt
 * (docs/RELIABILITY.md): what its attempts so far said decides. None reached Cast (a 429,
 * an unreachable gateway): it goes on the key it has now. One may have (a timeout after
 * sending): its fate is unknown, and nothing is sent on the new key.
 */

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith({ ...options, tuning: { sendBackoffMs: 100, ...options.tuning } }, "loc-1");
const NEW_KEY = "new-location-key-0123";

/** Cast's rate limit, which it answers before its idempotency cache: the request sent nothing. */
const rateLimited = () => castError(429, "RATE_LIMIT_EXCEEDED", "rate limit exceeded", { "retry-after": "1" });

async function finished(b: Bridge, messageId: string) {
  expect((await b.webhook(outbound(messageId))).status).toBe(200);
  await waitFor(async () => ["done", "dead"].includes((await b.core.jobs.get(messageId))?.state ?? ""), 15_000);
  return b.crm.statusReports().map((r) => r.body);
}

/** Each call to Cast's send endpoint: the API key and idempotency key it came with. */
const calls = (b: Bridge) => b.gateway.calls().map((r) => ({ apiKey: r.headers["x-api-key"], key: r.headers["x-idempotency-key"] }));

test("the location's API key changed after a 429: the message goes on the new key under a new idempotency key", async () => {
  const b = await start();
  b.gateway.checkKey(async (req) => {
    if (req.headers["x-api-key"] !== GLOBAL_SMS_KEY) return undefined;
    await b.core.tokens.setConfig("loc-1", { smsApiKey: NEW_KEY }, Date.now());
    return rateLimited();
  });

  expect(await finished(b, "m-1")).toEqual([{ status: "delivered" }]);

  const [first, second, ...more] = calls(b);
  expect(more).toEqual([]);
  expect(first?.apiKey).toBe(GLOBAL_SMS_KEY);
  expect(second?.apiKey).toBe(NEW_KEY);
  expect(second?.key).not.toBe(first?.key);
  expect(b.gateway.sent().map((s) => s.apiKey)).toEqual([NEW_KEY]);
  const shown = (await (await b.admin("/api/admin/messages/m-1")).json()) as { idempotency_key: string; timeline: { detail: string }[] };
  expect(shown.idempotency_key).toBe(second?.key);
  expect(shown.timeline.map((t) => t.detail)).toContain(
    "no earlier attempt reached the gateway: sent with the API key configured now, under a new idempotency key",
  );
});

test("the location's API key changed while the gateway was unreachable: the message goes on the new key once it is back", async () => {
  const port = await closedPort();
  const b = await start({ env: { SMS_API_URL: `http://127.0.0.1:${port}` }, tuning: { sms: { retryDelayMs: 20, retries: 1 } } });
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  const attempts = async () => (await b.core.jobs.get("m-1"))?.attempts ?? 0;
  await waitFor(async () => await attempts() >= 2, 10_000);
  await b.core.tokens.setConfig("loc-1", { smsApiKey: NEW_KEY }, Date.now());
  // Claimed after the change (one in flight may have been claimed just before it), and unreachable too.
  const changedAt = await attempts();
  await waitFor(async () => await attempts() >= changedAt + 2, 10_000);

  const proxy = await forward(port, new URL(b.gateway.url).port);
  try {
    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 15_000);
  } finally {
    await new Promise((resolve) => proxy.close(resolve));
  }
  expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(calls(b).map((c) => c.apiKey)).toEqual([NEW_KEY]);
});

test("approval withdrawn after a 429: failed as not approved, and messages retry sends it once approved again", async () => {
  const b = await start();
  b.gateway.checkKey(async () => {
    b.gateway.checkKey(undefined);
    await b.core.tokens.setApproved("loc-1", false, Date.now());
    return rateLimited();
  });

  const reports = await finished(b, "m-1");

  expect(reports).toEqual([{ status: "failed", error: expect.objectContaining({ code: "not_approved" }) }]);
  await b.core.tokens.setApproved("loc-1", true, Date.now());
  const res = await b.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(200);
  await waitFor(() => b.crm.statusReports().length === 2, 10_000);
  expect(b.crm.statusReports().map((r) => r.body.status)).toEqual(["failed", "delivered"]);
  expect(b.gateway.sent()).toHaveLength(1);
});

test("a send that timed out after reaching Cast, then a 429, then a new API key: delivery unknown, nothing sent on the new key", async () => {
  const b = await start({ tuning: { sms: { timeoutMs: 200, retries: 0 } } });
  b.gateway.on(SEND, async () => {
    // The second attempt meets Cast's rate limit, before its cache; then the key changes.
    b.gateway.checkKey(async () => {
      b.gateway.checkKey(undefined);
      await b.core.tokens.setConfig("loc-1", { smsApiKey: NEW_KEY }, Date.now());
      return rateLimited();
    });
    await sleep(1000); // slower than the 200 ms timeout: Cast took it, bridge never heard
    return b.gateway.accept();
  });

  const reports = await finished(b, "m-1");

  expect(reports).toEqual([
    { status: "failed", error: expect.objectContaining({ code: "delivery_unknown", message: expect.stringMatching(/API key changed.*delivery unknown/) }) },
  ]);
  expect(calls(b).map((c) => c.apiKey)).toEqual([GLOBAL_SMS_KEY, GLOBAL_SMS_KEY]);
  const res = await b.admin("/api/admin/messages/m-1/retry", { method: "POST" });
  expect(res.status).toBe(409);
});

test("approval withdrawn after a send that timed out after reaching Cast: delivery unknown, and messages retry refuses it", async () => {
  const b = await start({ tuning: { sms: { timeoutMs: 200, retries: 0 } } });
  b.gateway.on(SEND, async () => {
    await b.core.tokens.setApproved("loc-1", false, Date.now());
    await sleep(1000);
    return b.gateway.accept();
  });

  const reports = await finished(b, "m-1");

  expect(reports).toEqual([{ status: "failed", error: expect.objectContaining({ code: "delivery_unknown" }) }]);
  expect(b.gateway.calls()).toHaveLength(1);
  await b.core.tokens.setApproved("loc-1", true, Date.now());
  expect((await b.admin("/api/admin/messages/m-1/retry", { method: "POST" })).status).toBe(409);
  expect(b.gateway.calls()).toHaveLength(1);
});

/** A gateway back on `port`: each connection piped to the fake Cast on `to`. */
async function forward(port: number, to: string): Promise<Server> {
  const server = createServer((socket) => {
    const upstream = createConnection(Number(to), "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}
