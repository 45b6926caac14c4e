import { createHash } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { H3Event } from "h3";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { closedPort, jsonResponse } from "../helpers/http.ts";
import { BALANCE, CAST, SEND } from "../helpers/fake-gateway.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

const startWith = bridgePerTest();
/** A bridge with "loc-1" installed (token valid for a day). */
const start = (options: BridgeOptions = {}) => startWith(options, "loc-1");

/** Sends one webhook and waits until its job is finished (done or dead). */
async function deliver(b: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  const res = await b.webhook(outbound(messageId, fields));
  expect(res.status).toBe(200);
  await waitFor(async () => ["done", "dead"].includes((await b.core.jobs.get(messageId))?.state ?? ""), 10_000);
  return b.crm.statusReports().filter((r) => r.messageId === messageId);
}

const sends = (b: Bridge) => b.gateway.calls();
const tokenCalls = (b: Bridge) => b.crm.received("POST /oauth/token");

describe("sender ID and gateway key (per location, else global)", () => {
  test.each([
    {
      name: "the location's own sender_id and sms_api_key",
      globalSender: "GLOBALSID",
      config: { senderId: "LOCSID", smsApiKey: "loc-key-0123456789" },
      expected: { apiKey: "loc-key-0123456789", sender_id: "LOCSID" },
    },
    {
      name: "no per-location values: the globals",
      globalSender: "GLOBALSID",
      config: {},
      expected: { apiKey: GLOBAL_SMS_KEY, sender_id: "GLOBALSID" },
    },
    {
      name: "values cleared to empty: the globals",
      globalSender: "GLOBALSID",
      config: { senderId: "", smsApiKey: "" },
      expected: { apiKey: GLOBAL_SMS_KEY, sender_id: "GLOBALSID" },
    },
    {
      name: "only a per-location sender_id",
      globalSender: "GLOBALSID",
      config: { senderId: "LOCSID" },
      expected: { apiKey: GLOBAL_SMS_KEY, sender_id: "LOCSID" },
    },
    {
      name: "only a per-location sms_api_key",
      globalSender: "GLOBALSID",
      config: { smsApiKey: "loc-key-0123456789" },
      expected: { apiKey: "loc-key-0123456789", sender_id: "GLOBALSID" },
    },
    {
      name: "no sender anywhere: sender_id omitted from the request",
      globalSender: "",
      config: {},
      expected: { apiKey: GLOBAL_SMS_KEY },
    },
  ])("$name", async ({ globalSender, config, expected }) => {
    const b = await start({ env: globalSender ? { SMS_SENDER_ID: globalSender } : {} });
    expect(await b.core.tokens.setConfig("loc-1", config, Date.now())).toBe(true);

    const [report] = await deliver(b, "m-1");

    expect(report?.body).toEqual({ status: "delivered" });
    expect(b.gateway.sent()).toEqual([{ ...expected, to: "09171234567", message: "hello m-1" }]);
    expect(JSON.parse(sends(b)[0]?.body ?? "{}")).toStrictEqual({
      to: "09171234567",
      message: "hello m-1",
      ...(expected.sender_id !== undefined && { sender_id: expected.sender_id }),
    });
  });
});

describe("what is sent", () => {
  test("attachment URLs are appended to the text, one per line", async () => {
    const b = await start();
    await deliver(b, "m-1", {
      message: "see the files",
      attachments: ["https://files.example/a.png", "https://files.example/b.pdf"],
    });
    expect(b.gateway.sent().map((s) => s.message)).toEqual([
      "see the files\nhttps://files.example/a.png\nhttps://files.example/b.pdf",
    ]);
  });

  test.each([
    ["+14155552671", "+141***2671"],
    ["+6321234567", "+632***4567"],
  ])("%s is not a PH mobile number: no SMS, reported failed, the number masked", async (phone, masked) => {
    const b = await start();
    const reports = await deliver(b, "m-1", { phone });

    expect(sends(b)).toEqual([]);
    expect(reports).toHaveLength(1);
    const body = reports[0]?.body;
    expect(body).toEqual({
      status: "failed",
      error: { code: expect.stringMatching(/\S/), type: "saas", message: `not a Philippine mobile number: ${masked}` },
    });
  });

  test.each([
    { name: "1,530 GSM characters, 10 parts: sent", message: "a".repeat(1530), attachments: [], sent: true },
    { name: "1,531 GSM characters, 11 parts: refused", message: "a".repeat(1531), attachments: [], sent: false },
    { name: "670 Unicode characters, 10 parts: sent", message: "ā".repeat(670), attachments: [], sent: true },
    { name: "671 Unicode characters, 11 parts: refused", message: "ā".repeat(671), attachments: [], sent: false },
    { name: "1,520 characters plus an attachment line: refused", message: "a".repeat(1520), attachments: ["https://x.io/1234"], sent: false },
  ])("SMS_MAX_PARTS (10 by default): $name", async ({ message, attachments, sent }) => {
    const b = await start();
    const reports = await deliver(b, "m-1", { message, attachments });

    expect(sends(b)).toHaveLength(sent ? 1 : 0);
    expect(reports.map((r) => r.body.status)).toEqual([sent ? "delivered" : "failed"]);
    if (!sent) expect(reports[0]?.body.error).toMatchObject({ code: "too_many_parts", type: "saas", message: "11 parts; at most 10 allowed" });
  });

  test("SMS_MAX_PARTS=100 lets a 10,000-character text through, and no more than 10,000", async () => {
    const b = await start({ env: { SMS_MAX_PARTS: "100" } });
    await deliver(b, "m-1", { message: "a".repeat(10_000) });
    const reports = await deliver(b, "m-2", { message: "a".repeat(10_001) });
    expect(b.gateway.sent().map((s) => s.message.length)).toEqual([10_000]);
    expect(reports.at(-1)?.body.error).toMatchObject({ message: "the message is 10001 characters; the SMS gateway takes at most 10000" });
  });

  // docs/http.md, "The webhook", allows a 400 only for a missing id or phone: anything else the
  // gateway cannot take is accepted and reported failed, so the CRM shows why.
  test.each([
    { name: "a 20,000-character message", fields: { message: "a".repeat(20_000) }, says: /20000 characters/ },
    { name: "300 attachments", fields: { attachments: Array.from({ length: 300 }, (_, i) => `https://x.io/${i}`) }, says: /parts; at most 10/ },
    { name: "a 5,000-character attachment URL", fields: { attachments: [`https://x.io/${"a".repeat(5000)}`] }, says: /parts; at most 10/ },
    { name: "a 300-character phone", fields: { phone: `+63${"9".repeat(297)}` }, says: /^not a Philippine mobile number: \+639\*\*\*9999$/ },
  ])("$name: acknowledged, no SMS, reported failed", async ({ fields, says }) => {
    const b = await start();
    const reports = await deliver(b, "m-1", fields);

    expect(sends(b)).toEqual([]);
    expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: expect.any(String), type: "saas", message: expect.stringMatching(says) } }]);
  });

  test("an API key stored before keys were checked, that no HTTP header can carry: no call, reported failed", async () => {
    const b = await start();
    await b.core.tokens.setConfig("loc-1", { smsApiKey: "ключ-1234567890" }, Date.now()); // the store itself does not check
    const reports = await deliver(b, "m-1");

    expect(sends(b)).toEqual([]);
    expect(reports.map((r) => r.body)).toEqual([
      { status: "failed", error: { code: "invalid_api_key", type: "saas", message: expect.stringMatching(/printable ASCII.*set it again/) } },
    ]);
  });

  test("null message and attachments count as none: the attachments are sent, and no text is empty_message", async () => {
    const b = await start();
    await deliver(b, "m-1", { message: null, attachments: ["https://x.io/a.png"] });
    const reports = await deliver(b, "m-2", { message: null, attachments: null });

    expect(b.gateway.sent().map((s) => s.message)).toEqual(["https://x.io/a.png"]);
    expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: expect.objectContaining({ code: "empty_message" }) }]);
  });
});

describe("when the database refuses writes for a while", () => {
  const refusing = sqliteOnly("SQLite's PRAGMA query_only makes the database refuse writes");

  refusing("after the send: the result is stored once the disk takes it, reported delivered, sent once", async () => {
    const b = await start();
    b.gateway.on(SEND, () => {
      b.core.db.pragma("query_only = ON"); // SQLite refuses every write: SQLITE_READONLY
      setTimeout(() => b.core.db.pragma("query_only = OFF"), 300); // ...for 300 ms, as a full disk freed
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect(await b.core.jobs.get("m-1")).toMatchObject({ state: "done", outcome: "delivered", gatewayMessageId: expect.stringMatching(/\S/) });
    expect(b.logs.join("\n")).toMatch(/m-1: its result \(delivered, gateway id \S+\) could not be stored/);
  });

  refusing("after the send: the result is never given up while the process runs (writes refused longer than ~11 tries)", async () => {
    const b = await start({ tuning: { resultStoreRetryMs: 1 } }); // 1 ms doubling: 11 tries in ~2 s
    const failures = () => b.logs.filter((line) => /m-1: its result \(delivered, gateway id \S+\) could not be stored/.test(line));
    b.gateway.on(SEND, () => {
      b.core.db.pragma("query_only = ON");
      // Writes work again after the 13th failed try (up to 11 logged before: 12 tries, 11 waits).
      void waitFor(() => failures().length >= 13, 9000).then(
        () => b.core.db.pragma("query_only = OFF"),
        () => undefined, // the test fails on its own: the job never finishes
      );
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect(await b.core.jobs.get("m-1")).toMatchObject({ state: "done", outcome: "delivered", gatewayMessageId: expect.stringMatching(/\S/) });
    expect(failures().length).toBeGreaterThanOrEqual(13);
    expect(b.logs.join("\n")).not.toContain("job for message m-1 failed");
  });

  refusing("after the report: the job is tried again after a pause, not in a loop, and finishes once writes work", async () => {
    const b = await start();
    let refusing = true;
    b.crm.on("PUT /conversations/messages/:messageId/status", () => {
      if (refusing) b.core.db.pragma("query_only = ON");
      return jsonResponse({ success: true });
    });
    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    await waitFor(() => b.crm.statusReports().length > 0);
    // A window in which a job run again at once would report hundreds of times: with the
    // pause (1 s at first, doubling), only a few reports may come.
    await sleep(1500);
    const reportsWhileRefused = b.crm.statusReports().length;
    refusing = false;
    b.core.db.pragma("query_only = OFF");

    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);
    expect(reportsWhileRefused).toBeLessThanOrEqual(3); // without the pause: hundreds
    expect(b.logs.join("\n")).toMatch(/job for message m-1 failed: .*; trying again in 1000 ms/);
    expect(sends(b)).toHaveLength(1);
  });
});

describe("gateway answers", () => {
  test('201 {"success":true,"message_id":…}: delivered, ONE call', async () => {
    const b = await start();
    b.gateway.on(SEND, () => jsonResponse({ success: true, message_id: "cast-201", parts: 1 }, 201));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("429 with Retry-After: 0 twice, then 200: three calls and delivered", async () => {
    const b = await start();
    // Cast's rate limiter's 429, which (like the fake's own limits) answers before the idempotency
    // cache and keeps nothing; a 429 Cast kept is replayed: "kept in the gateway's cache" below.
    b.gateway.forgetFailedAnswers();
    let calls = 0;
    b.gateway.on(SEND, () =>
      ++calls <= 2 ? jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "0" }) : b.gateway.accept(),
    );

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(3);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("always 429: waited out in the queue with the same key until SMS_HOLD_MAX, then failed", async () => {
    const b = await start({ env: { SMS_HOLD_MAX: "1s" }, tuning: { sendBackoffMs: 100 } });
    // Cast's rate limiter's 429, which (like the fake's own limits) answers before the idempotency
    // cache and keeps nothing; a 429 Cast kept is replayed: "kept in the gateway's cache" below.
    b.gateway.forgetFailedAnswers();
    b.gateway.on(SEND, () => jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "0" }));

    const reports = await deliver(b, "m-1");

    expect(sends(b).length).toBeGreaterThanOrEqual(2);
    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(/429.*gave up after \d+ attempts/) } });
  });

  test.each(["2", "1.5"])("429 with Retry-After: %s s: the message waits in the queue, holding no worker, and goes no sooner", async (retryAfter) => {
    const b = await start({ tuning: { sendBackoffMs: 10 } });
    const calls: number[] = [];
    b.gateway.on(SEND, () => {
      calls.push(Date.now());
      return calls.length === 1 ? jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": retryAfter }) : b.gateway.accept();
    });

    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    await waitFor(async () => calls.length === 1 && (await b.core.jobs.get("m-1"))?.state === "queued"); // not "sending" in a sleeping worker
    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);

    expect(calls).toHaveLength(2);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(Number(retryAfter) * 1000 - 100);
    expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("a 429 on a status or balance call pauses every send of the process for its Retry-After", async () => {
    const b = await start({ worker: false });
    b.gateway.on(BALANCE, () => jsonResponse({ success: false, error: "rate limit exceeded", error_code: "RATE_LIMIT_EXCEEDED" }, 429, { "retry-after": "30" }));

    await expect(b.core.clients.cast.balance(GLOBAL_SMS_KEY)).rejects.toMatchObject({ failure: "rate_limited" });

    // Cast's per-address limit counts every request: another key's send must wait too.
    expect(b.core.delivery.scheduler.trySend("another-key-0123456789", "loc-1")).toBeGreaterThan(25_000);
    expect(b.core.delivery.scheduler.tryPoll()).toBeGreaterThan(25_000);
  });

  test.each([
    { parts: 3, stored: 3 },
    { parts: 2.5, stored: 1 },
    { parts: -2, stored: 1 },
    { parts: "3", stored: 1 },
  ])("200 with parts $parts: the message log keeps $stored", async ({ parts, stored }) => {
    const b = await start();
    b.gateway.on(SEND, () => jsonResponse({ success: true, message_id: "CASTabc123def456", parts }));

    const reports = await deliver(b, "m-1");

    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect((await b.core.messages.get("m-1"))?.parts).toBe(stored);
  });

  test("a sandbox key's answer (sandbox: true): nothing was sent, reported failed, never delivered", async () => {
    const b = await start();
    // ../shared/fixtures/cast/send-sandbox-200.json, Cast's documented answer to a cast_test_ key.
    b.gateway.on(SEND, () => jsonResponse({ success: true, message_id: "SANDBOX_a1b2c3d4e5f6a7b8", parts: 1, sandbox: true }));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([
      { status: "failed", error: { code: "gateway_rejected", type: "saas", message: expect.stringMatching(/sandbox key: the gateway sent nothing/) } },
    ]);
  });

  test('400 {"success":false,"error":"Invalid sender"}: ONE call, never resent, reported failed', async () => {
    const b = await start();
    b.gateway.on(SEND, () => jsonResponse({ success: false, error: "Invalid sender" }, 400));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "gateway_rejected", type: "saas", message: expect.stringMatching(/Invalid sender/) } }]);
  });

  test.each([
    { name: "500", answer: () => new Response("oops", { status: 500 }) },
    { name: "503 SERVICE_UNAVAILABLE", answer: () => jsonResponse({ success: false, error: "down", error_code: "SERVICE_UNAVAILABLE" }, 503) },
    {
      name: "a dropped connection",
      answer: (_: unknown, event: H3Event) => {
        event.runtime?.node?.req.socket.destroy();
        throw new Error("connection dropped before an answer");
      },
    },
  ])("$name, then 200: tried again with the same idempotency key, delivered, one SMS", async ({ answer }) => {
    const b = await start({ tuning: { sendBackoffMs: 50 } });
    // A 500 or 503 from in front of Cast (a proxy's "oops"), which never reached its idempotency
    // cache. Cast keeps its own answer, whatever it was, and replays it: see the kept 500/502 and
    // 503/429 tests below.
    b.gateway.forgetFailedAnswers();
    let calls = 0;
    b.gateway.on(SEND, (req, event) => (++calls === 1 ? answer(req, event) : b.gateway.accept()));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(2);
    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(b.gateway.keys()[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    // The outage's own lines speak for the message: its line is debug.
    expect(b.logs.join("")).toMatch(/\[debug\] message m-1 of location loc-1: .*; trying again in \d+ ms with the same idempotency key/);
  });

  test.each([
    { name: "503 SERVICE_UNAVAILABLE", answer: () => jsonResponse({ success: false, error: "down", error_code: "SERVICE_UNAVAILABLE" }, 503) },
    { name: "429 RATE_LIMIT_EXCEEDED", answer: () => jsonResponse({ success: false, error: "rate limit exceeded", error_code: "RATE_LIMIT_EXCEEDED" }, 429, { "retry-after": "0" }) },
  ])("$name kept in the gateway's cache and replayed: the next attempt takes a new idempotency key, one SMS", async ({ answer }) => {
    const b = await start({ env: { SMS_HOLD_MAX: "5s" }, tuning: { sendBackoffMs: 50 } });
    let calls = 0;
    b.gateway.on(SEND, () => (++calls === 1 ? answer() : b.gateway.accept()));

    const reports = await deliver(b, "m-1");

    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    const [first, ...later] = b.gateway.keys();
    expect(later.at(-1)).not.toBe(first);
    expect(b.gateway.sent()).toHaveLength(2); // the failed first request, and the one SMS
    expect(b.logs.join("")).toMatch(/replayed its kept answer \((503|429)\).*trying again in \d+ ms with a new idempotency key/);
  });

  test.each([
    { name: "500 INTERNAL_ERROR", status: 500, code: "INTERNAL_ERROR" },
    { name: "502 PROVIDER_ERROR", status: 502, code: "PROVIDER_ERROR" },
  ])("$name kept in the gateway's cache and replayed: the same key every time, one request handled, delivery unknown after SMS_HOLD_MAX", async ({ status, code }) => {
    const b = await start({ env: { SMS_HOLD_MAX: "1s" }, tuning: { sendBackoffMs: 100 } });
    // Cast keeps "the original response" for 24 hours and replays it: the 500 may have followed a
    // send, so a new key could send a second SMS; the same key only ever gets the 500 again.
    let calls = 0;
    b.gateway.on(SEND, () => (++calls === 1 ? jsonResponse({ success: false, error: "boom", error_code: code }, status) : b.gateway.accept()));

    const reports = await deliver(b, "m-1");

    expect(sends(b).length).toBeGreaterThanOrEqual(2);
    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(b.gateway.sent()).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([
      { status: "failed", error: { code: "delivery_unknown", type: "saas", message: expect.stringMatching(new RegExp(`^gateway answered ${status}: boom; delivery unknown; gave up after \\d+ attempts in \\d+ s$`)) } },
    ]);
  });

  test("a 503 answered afresh (no replay header) is tried again with the same key", async () => {
    const b = await start({ tuning: { sendBackoffMs: 50 } });
    // A 503 from in front of Cast's idempotency cache (a load balancer), which Cast never kept.
    b.gateway.forgetFailedAnswers();
    let calls = 0;
    b.gateway.on(SEND, () => (++calls === 1 ? jsonResponse({ success: false, error: "down", error_code: "SERVICE_UNAVAILABLE" }, 503) : b.gateway.accept()));

    await deliver(b, "m-1");

    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(b.gateway.sent()).toHaveLength(2);
  });

  test.each([
    { name: "200 with a garbage body", answer: () => new Response("<html>ok?</html>", { status: 200 }), says: /delivery unknown/ },
    { name: "202 with an empty body (no refusal, no message_id)", answer: () => new Response(null, { status: 202 }), says: /202 without a message_id; delivery unknown/ },
  ])("$name, answered again from the cache: one SMS at most, failed once SMS_HOLD_MAX is over", async ({ answer, says }) => {
    const b = await start({ env: { SMS_HOLD_MAX: "1s" }, tuning: { sendBackoffMs: 100 } });
    b.gateway.on(SEND, answer);

    const reports = await deliver(b, "m-1");

    expect(b.gateway.sent()).toHaveLength(1);
    expect(sends(b).length).toBeGreaterThanOrEqual(2);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(says) } });
  });

  test("slower than the timeout: tried again with the same key, the gateway answers from its cache, delivered, one SMS", async () => {
    const b = await start({ tuning: { sms: { timeoutMs: 200 }, sendBackoffMs: 50 } });
    b.gateway.on(SEND, async () => {
      await sleep(1000); // a gateway slower than the 200 ms timeout
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(b.gateway.sent()).toHaveLength(1);
    expect(sends(b).length).toBeGreaterThanOrEqual(2);
    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("unreachable gateway (closed port): retried until SMS_HOLD_MAX, then reported failed, no crash", async () => {
    const port = await closedPort();
    const b = await start({
      env: { SMS_API_URL: `http://127.0.0.1:${port}`, SMS_HOLD_MAX: "1s" },
      tuning: { sms: { retryDelayMs: 50 }, sendBackoffMs: 100 },
    });

    const reports = await deliver(b, "m-1");

    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(/unreachable.*gave up after \d+ attempts/) } });
    expect(reports[0]?.body.error?.message).toContain(`gateway unreachable: connection refused by 127.0.0.1:${port} (ECONNREFUSED)`);
    expect(b.worker.running).toBe(true);
  });

  test("giving up on 429s after an attempt without an answer (502): failed, delivery unknown", async () => {
    const b = await start({ env: { SMS_HOLD_MAX: "1s" }, tuning: { sendBackoffMs: 100 } });
    // The 429s come from Cast's rate limits, in front of its idempotency cache: the kept 502
    // is never reached again, so the fake forgets it as those limits would.
    b.gateway.forgetFailedAnswers();
    let calls = 0;
    b.gateway.on(SEND, () =>
      ++calls === 1
        ? jsonResponse({ success: false, error: "Bad Gateway" }, 502)
        : jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "0" }),
    );

    const reports = await deliver(b, "m-1");

    expect(calls).toBeGreaterThanOrEqual(2);
    expect(new Set(b.gateway.keys()).size).toBe(1);
    expect(reports.map((r) => r.body)).toEqual([
      {
        status: "failed",
        error: { code: "delivery_unknown", type: "saas", message: expect.stringMatching(/429.*gave up after \d+ attempts.*; an earlier attempt got no clear answer, delivery unknown$/) },
      },
    ]);
  });

  test("uninstalled after an attempt without an answer (502): failed, delivery unknown, not sent again", async () => {
    const b = await start({ tuning: { sendBackoffMs: 100 } });
    b.gateway.on(SEND, async () => {
      await b.core.tokens.markUninstalled("loc-1", Date.now());
      return jsonResponse({ success: false, error: "Bad Gateway" }, 502);
    });

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    const message = "location loc-1 has uninstalled the app; reinstall it to send again; an earlier attempt got no clear answer, delivery unknown";
    expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: "delivery_unknown", type: "saas", message } }]);
  });

  test("a gateway outage: connections refused, then back: delivered exactly once, never reported failed", async () => {
    const port = await closedPort();
    const b = await start({ env: { SMS_API_URL: `http://127.0.0.1:${port}` }, tuning: { sms: { retryDelayMs: 20, retries: 1 }, sendBackoffMs: 100 } });
    const res = await b.webhook(outbound("m-1"));
    expect(res.status).toBe(200);
    // Several attempts fail while the gateway is down; the message waits, it is not failed.
    await waitFor(async () => ((await b.core.jobs.get("m-1"))?.attempts ?? 0) >= 3, 10_000);
    expect(b.crm.statusReports()).toEqual([]);
    const back = await gatewayOn(port);
    try {
      await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 20_000);
      expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
      expect(back.bodies).toEqual([{ to: "09171234567", message: "hello m-1" }]);
    } finally {
      await back.close();
    }
  });

  test("the location's API key changed after the send: the receipt is still asked with the key that sent it", async () => {
    const b = await start();
    let carrierDone = false;
    b.gateway.receipts(() => (carrierDone ? { status: "delivered", dlr_status: "DELIVRD" } : { status: "sent" }));
    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "reporting" && b.gateway.logCalls().length > 0);

    await b.core.tokens.setConfig("loc-1", { smsApiKey: "new-location-key-0123" }, Date.now());
    const asksBefore = b.gateway.logCalls().length + b.gateway.statusCalls().length;
    carrierDone = true;

    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);
    expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
    const asks = [...b.gateway.logCalls(), ...b.gateway.statusCalls()];
    expect(asks.length).toBeGreaterThan(asksBefore);
    expect(new Set(asks.map((r) => r.headers["x-api-key"]))).toEqual(new Set([GLOBAL_SMS_KEY]));
  });

  test("the location's API key changed between two attempts without an answer: failed, delivery unknown, not sent on the new key", async () => {
    const b = await start({ tuning: { sms: { timeoutMs: 200 }, sendBackoffMs: 300 } });
    b.gateway.on(SEND, async () => {
      await b.core.tokens.setConfig("loc-1", { smsApiKey: "new-location-key-0123" }, Date.now());
      await sleep(1000); // a gateway slower than the 200 ms timeout
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(b.gateway.sent().map((s) => s.apiKey)).toEqual([GLOBAL_SMS_KEY]);
    expect(reports.map((r) => r.body)).toEqual([
      { status: "failed", error: { code: "delivery_unknown", type: "saas", message: expect.stringMatching(/API key changed.*delivery unknown/) } },
    ]);
  });
});

describe("status reports to the CRM", () => {
  // The "crash" is this server's own claim: on SQLite a start recovers every send caught
  // mid-way; on PostgreSQL only a dead server's are rescued (test/integration/servers.test.ts).
  const atStart = sqliteOnly("recovery at start of the one server on the file (recoverAtStart, src/core/run.ts)");
  test.each([
    { name: "403 twice, then 200: retried until done", statuses: [403, 403], then: 200, attempts: 10, calls: 3, state: "done" },
    { name: "429 once, then 200: retried until done", statuses: [429], then: 200, attempts: 10, calls: 2, state: "done" },
    { name: "500 forever: bounded attempts, then dead", statuses: [], then: 500, attempts: 3, calls: 3, state: "dead" },
    { name: "404: not retried, dead", statuses: [404], then: 200, attempts: 10, calls: 1, state: "dead" },
  ])("$name", async ({ statuses, then, attempts, calls, state }) => {
    const b = await start({ tuning: { reportAttempts: attempts } });
    let n = 0;
    b.crm.on("PUT /conversations/messages/:messageId/status", () => {
      const status = statuses[n++] ?? then;
      return status === 200 ? jsonResponse({ success: true }) : jsonResponse({ message: `status ${status}` }, status);
    });

    const reports = await deliver(b, "m-1");

    expect((await b.core.jobs.get("m-1"))?.state).toBe(state);
    expect(reports).toHaveLength(calls);
    for (const report of reports) {
      expect(report).toMatchObject({ authorization: "Bearer at-seed-loc-1", body: { status: "delivered" } });
    }
    // A 403 right after the webhook is HighLevel being slow, not a bad token.
    expect(tokenCalls(b)).toEqual([]);
    expect(sends(b)).toHaveLength(1);
  });

  test("a CRM outage longer than the first retries: by default the report is still tried until the CRM is back", async () => {
    // The clock jumps past the longest wait between two tries every 50 ms, so hours of
    // retries take moments.
    let skew = 0;
    const b = await start({ now: () => Date.now() + skew });
    const clock = setInterval(() => (skew += 10 * 60_000 + 1000), 50);
    const down = 14;
    let n = 0;
    b.crm.on("PUT /conversations/messages/:messageId/status", () =>
      n++ < down ? jsonResponse({ message: "CRM down" }, 503) : jsonResponse({ success: true }),
    );

    const reports = await deliver(b, "m-1").finally(() => clearInterval(clock));

    expect((await b.core.jobs.get("m-1"))?.state).toBe("done");
    expect(reports).toHaveLength(down + 1);
    expect(sends(b)).toHaveLength(1);
  });

  test("a location with no record: no SMS, no report, logged; the next message is still delivered", async () => {
    const b = await start();

    await deliver(b, "m-ghost", { locationId: "loc-ghost" });
    expect(await b.core.jobs.get("m-ghost")).toMatchObject({ state: "dead", outcome: "failed", errorCode: "no_token", errorMessage: "no token for location: loc-ghost" });
    expect(b.logs.join("")).toContain("no token for location: loc-ghost");

    const reports = await deliver(b, "m-ok");
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent().map((s) => s.message)).toEqual(["hello m-ok"]);
    expect(b.crm.statusReports().map((r) => r.messageId)).toEqual(["m-ok"]);
  });

  atStart("a job a crash left in 'sending' after its first attempt went: sent again with its key, answered from the cache, one SMS", async () => {
    const b = await start({ worker: false });
    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    const job = (await b.core.jobs.get("m-1"))!;
    // The attempt the crash interrupted: it reached the gateway, its answer was lost.
    const claim = { idempotencyKey: "key-before-crash", apiKeyTag: createHash("sha256").update(GLOBAL_SMS_KEY).digest("hex").slice(0, 16) };
    expect(await b.core.jobs.claimForSending(job.id, Date.now(), claim)).toBe(true);
    const first = await fetch(`${b.gateway.url}/api/v1/sms/send`, {
      method: "POST",
      headers: { "x-api-key": GLOBAL_SMS_KEY, "x-idempotency-key": "key-before-crash", "content-type": "application/json" },
      body: JSON.stringify({ to: "09171234567", message: "hello m-1" }),
    });
    expect(first.status).toBe(200);

    await b.worker.start();
    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done");

    expect(b.gateway.keys()).toEqual(["key-before-crash", "key-before-crash"]);
    expect(b.gateway.sent()).toHaveLength(1);
    expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
    const shown = (await (await b.admin("/api/admin/messages/m-1")).json()) as { timeline: { event: string; detail: string }[] };
    expect(shown.timeline).toContainEqual(expect.objectContaining({ event: "restart", detail: expect.stringContaining("sent again with the same idempotency key") }));
    expect(b.logs.join("")).toContain("1 message(s) were being sent when bridge stopped; sending them again with the same idempotency key");
  });

  sqliteOnly("notes every move to sending with a SQLite TEMP TRIGGER")("a message refused before any gateway call never passes through 'sending', where a crash would make it 'delivery unknown'", async () => {
    const b = await start();
    // Every move to "sending" on this connection (the worker's), noted by the database itself.
    b.core.db.exec(`
      CREATE TEMP TABLE moved_to_sending (message_id TEXT);
      CREATE TEMP TRIGGER note_sending AFTER UPDATE OF state ON main.jobs WHEN NEW.state = 'sending'
      BEGIN INSERT INTO moved_to_sending VALUES (NEW.message_id); END;`);
    const moved = () => b.core.db.prepare<[], { message_id: string }>("SELECT message_id FROM moved_to_sending").all().map((r) => r.message_id);

    await deliver(b, "m-refused", { phone: "+14155552671" });
    await deliver(b, "m-sent");

    expect(await b.core.jobs.get("m-refused")).toMatchObject({ state: "done", errorCode: "invalid_phone" });
    expect(moved()).toEqual(["m-sent"]);
  });

  atStart("a job an older bridge left in 'sending' (no idempotency key) is reported failed and never resent", async () => {
    const b = await start({ worker: false });
    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    const job = (await b.core.jobs.get("m-1"))!;
    expect(await b.core.jobs.claimForSending(job.id, Date.now())).toBe(true);

    await b.worker.start();
    await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done");

    expect(sends(b)).toEqual([]);
    expect(b.crm.statusReports().map((r) => r.body)).toEqual([
      { status: "failed", error: { code: "delivery_unknown", type: "saas", message: "delivery unknown after restart" } },
    ]);
  });

});

/** A minimal Cast.ph on a given port, accepting every SMS. */
async function gatewayOn(port: number) {
  const bodies: unknown[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      // Cast's documented answers, for the one message it ever accepts.
      const logs = { ...CAST.logs, count: 1, logs: [{ ...CAST.logs.logs[1], smpp_message_id: "cast-back" }] };
      if (req.url?.startsWith("/api/v1/sms/logs")) return res.end(JSON.stringify(logs));
      if (req.method === "GET") return res.end(JSON.stringify({ ...CAST.status, message_id: "cast-back" }));
      bodies.push(JSON.parse(raw));
      res.end(JSON.stringify({ success: true, message_id: "cast-back", parts: 1 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("a status report answered 401", () => {
  test("refreshes the location's token once and reports with the new one", async () => {
    const bridge = await startWith();
    await bridge.install("loc-1");
    const first = (await bridge.core.tokens.get("loc-1"))!.accessToken;
    bridge.crm.on("PUT /conversations/messages/:messageId/status", (req) =>
      req.headers.authorization === `Bearer ${first}` ? jsonResponse({ message: "Invalid JWT" }, 401) : jsonResponse({ success: true }),
    );
    expect((await bridge.webhook(outbound("m-401"))).status).toBe(200);
    await waitFor(async () => (await bridge.core.jobs.get("m-401"))?.state === "done");
    const reports = bridge.crm.statusReports();
    expect(reports.map((r) => r.authorization)).toEqual([`Bearer ${first}`, `Bearer ${(await bridge.core.tokens.get("loc-1"))!.accessToken}`]);
    expect(bridge.crm.received("POST /oauth/token").filter((r) => r.body.includes("refresh_token"))).toHaveLength(1);
    expect(bridge.gateway.sent()).toHaveLength(1);
  });

  test("always 401 (a missing scope, say): ONE refresh for all of the location's reports, not one per try", async () => {
    const bridge = await startWith({ tuning: { reportAttempts: 4 } });
    await bridge.install("loc-1");
    bridge.crm.on("PUT /conversations/messages/:messageId/status", () => jsonResponse({ message: "The token is not authorized for this scope." }, 401));
    for (const id of ["m-a", "m-b", "m-c"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
    await waitFor(async () => (await Promise.all(["m-a", "m-b", "m-c"].map((id) => bridge.core.jobs.get(id)))).every((found) => found?.state === "dead"), 10_000);

    expect(bridge.crm.statusReports()).toHaveLength(3 * 4); // every report tried reportAttempts times
    expect(bridge.crm.received("POST /oauth/token").filter((r) => r.body.includes("refresh_token"))).toHaveLength(1);
    expect(bridge.gateway.sent()).toHaveLength(3);
  });
});
