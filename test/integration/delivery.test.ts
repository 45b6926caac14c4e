import { createServer, type IncomingMessage } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, test } from "vitest";
import { GLOBAL_SMS_KEY, outbound, startBridge, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { closedPort, jsonResponse } from "../helpers/http.ts";

let bridge: Bridge | undefined;

/** A bridge with "loc-1" installed (token valid for a day). */
async function start(options: BridgeOptions = {}): Promise<Bridge> {
  bridge = await startBridge(options);
  bridge.seed("loc-1");
  return bridge;
}

afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

/** Sends one webhook and waits until its job is finished (done or dead). */
async function deliver(b: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  const res = await b.webhook(outbound(messageId, fields));
  expect(res.status).toBe(200);
  await waitFor(() => ["done", "dead"].includes(b.core.jobs.get(messageId)?.state ?? ""), 10_000);
  return b.crm.statusReports().filter((r) => r.messageId === messageId);
}

const sends = (b: Bridge) => b.gateway.received("POST /api/sms/send");
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
    expect(b.core.tokens.setConfig("loc-1", config, Date.now())).toBe(true);

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

  test.each(["+14155552671", "+6321234567"])("%s is not a PH mobile number: no SMS, reported failed", async (phone) => {
    const b = await start();
    const reports = await deliver(b, "m-1", { phone });

    expect(sends(b)).toEqual([]);
    expect(reports).toHaveLength(1);
    const body = reports[0]?.body;
    expect(body).toEqual({
      status: "failed",
      error: { code: expect.stringMatching(/\S/), type: "saas", message: expect.stringContaining(phone) },
    });
  });

  test.each([
    { name: "450 characters: sent", message: "a".repeat(450), attachments: [], sent: true },
    { name: "451 characters: refused", message: "a".repeat(451), attachments: [], sent: false },
    { name: "440 characters plus an attachment line: refused", message: "a".repeat(440), attachments: ["https://x.io/1234"], sent: false },
  ])("message length limit: $name", async ({ message, attachments, sent }) => {
    const b = await start();
    const reports = await deliver(b, "m-1", { message, attachments });

    expect(sends(b)).toHaveLength(sent ? 1 : 0);
    expect(reports.map((r) => r.body.status)).toEqual([sent ? "delivered" : "failed"]);
    if (!sent) expect(reports[0]?.body.error).toMatchObject({ type: "saas", message: expect.stringMatching(/450/) });
  });

  // CONTRACT.md 4 allows a 400 only for a missing id or phone: anything else the
  // gateway cannot take is accepted and reported failed, so the CRM shows why.
  test.each([
    { name: "a 20,000-character message", fields: { message: "a".repeat(20_000) }, says: /20000 characters/ },
    { name: "30 attachments", fields: { attachments: Array.from({ length: 30 }, (_, i) => `https://x.io/${i}`) }, says: /450/ },
    { name: "a 5,000-character attachment URL", fields: { attachments: [`https://x.io/${"a".repeat(5000)}`] }, says: /450/ },
    { name: "a 300-character phone", fields: { phone: `+63${"9".repeat(297)}` }, says: /^not a Philippine mobile number: \+639{37}…$/ },
  ])("$name: acknowledged, no SMS, reported failed", async ({ fields, says }) => {
    const b = await start();
    const reports = await deliver(b, "m-1", fields);

    expect(sends(b)).toEqual([]);
    expect(reports.map((r) => r.body)).toEqual([{ status: "failed", error: { code: expect.any(String), type: "saas", message: expect.stringMatching(says) } }]);
  });

  test("an API key stored before keys were checked, that no HTTP header can carry: no call, reported failed", async () => {
    const b = await start();
    b.core.tokens.setConfig("loc-1", { smsApiKey: "ключ-1234567890" }, Date.now()); // the store itself does not check
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
  test("after the send: the result is stored once the disk takes it, reported delivered, sent once", async () => {
    const b = await start();
    b.gateway.on("POST /api/sms/send", () => {
      b.core.db.pragma("query_only = ON"); // SQLite refuses every write: SQLITE_READONLY
      setTimeout(() => b.core.db.pragma("query_only = OFF"), 300);
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect(b.logs.join("\n")).toMatch(/m-1: its result \(delivered, gateway id \S+\) could not be stored/);
  });

  test("after the send: the result is never given up while the process runs (writes refused longer than ~11 tries)", async () => {
    const b = await start({ tuning: { resultStoreRetryMs: 1 } }); // 1 ms doubling: 11 tries in ~2 s
    const failures = () => b.logs.filter((line) => /m-1: its result \(delivered, gateway id \S+\) could not be stored/.test(line));
    b.gateway.on("POST /api/sms/send", () => {
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
    expect(failures().length).toBeGreaterThanOrEqual(13);
    expect(b.logs.join("\n")).not.toContain("job for message m-1 failed");
  });

  test("after the report: the job is tried again after a pause, not in a loop, and finishes once writes work", async () => {
    const b = await start();
    let refusing = true;
    b.crm.on("PUT /conversations/messages/:messageId/status", () => {
      if (refusing) b.core.db.pragma("query_only = ON");
      return jsonResponse({ success: true });
    });
    expect((await b.webhook(outbound("m-1"))).status).toBe(200);
    await waitFor(() => b.crm.statusReports().length > 0);
    await sleep(1500);
    const reportsWhileRefused = b.crm.statusReports().length;
    refusing = false;
    b.core.db.pragma("query_only = OFF");

    await waitFor(() => b.core.jobs.get("m-1")?.state === "done", 10_000);
    expect(reportsWhileRefused).toBeLessThanOrEqual(3); // without the pause: hundreds
    expect(b.logs.join("\n")).toMatch(/job for message m-1 failed: .*; trying again in 1000 ms/);
    expect(sends(b)).toHaveLength(1);
  });
});

describe("gateway answers", () => {
  test('201 {"success":true,"message_id":…}: delivered, ONE call', async () => {
    const b = await start();
    b.gateway.on("POST /api/sms/send", () => jsonResponse({ success: true, message_id: "cast-201", parts: 1 }, 201));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("429 with Retry-After: 0 twice, then 200: three calls and delivered", async () => {
    const b = await start();
    let calls = 0;
    b.gateway.on("POST /api/sms/send", () =>
      ++calls <= 2 ? jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "0" }) : b.gateway.accept(),
    );

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(3);
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
  });

  test("always 429: bounded calls (4 retries + 1), then failed", async () => {
    const b = await start();
    b.gateway.on("POST /api/sms/send", () => jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "0" }));

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(5);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(/429|rate/i) } });
  });

  test("429 with Retry-After: 2 s: waited out before the next try, but not after the last one", async () => {
    const b = await start({ tuning: { sms: { retries: 1 } } });
    const calls: number[] = [];
    b.gateway.on("POST /api/sms/send", () => {
      calls.push(Date.now());
      return jsonResponse({ success: false, error: "slow down" }, 429, { "retry-after": "2" });
    });

    const reports = await deliver(b, "m-1");
    const reported = Date.now();

    expect(calls).toHaveLength(2);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(1900);
    expect(reported - calls[1]!).toBeLessThan(1000); // waiting would only keep the job "sending"
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { message: expect.stringMatching(/429/) } });
  });

  test.each([
    { name: "500", answer: () => new Response("oops", { status: 500 }), says: /500/ },
    { name: "200 with a garbage body", answer: () => new Response("<html>ok?</html>", { status: 200 }), says: /delivery unknown/ },
    { name: "202 with an empty body (no refusal, no message_id)", answer: () => new Response(null, { status: 202 }), says: /202 without a message_id; delivery unknown/ },
    {
      name: '400 {"success":false,"error":"Invalid sender"}',
      answer: () => jsonResponse({ success: false, error: "Invalid sender" }, 400),
      says: /Invalid sender/,
    },
  ])("$name: ONE call, never resent, reported failed", async ({ answer, says }) => {
    const b = await start();
    b.gateway.on("POST /api/sms/send", answer);

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(says) } });
  });

  test("slower than the timeout: ONE call (the SMS may have gone), reported failed", async () => {
    const b = await start({ tuning: { sms: { timeoutMs: 200 } } });
    b.gateway.on("POST /api/sms/send", async () => {
      await sleep(1000);
      return b.gateway.accept();
    });

    const reports = await deliver(b, "m-1");

    expect(sends(b)).toHaveLength(1);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(/unknown/) } });
  });

  test("unreachable gateway (closed port): retried, then reported failed, no crash", async () => {
    const b = await start({ env: { SMS_API_URL: `http://127.0.0.1:${await closedPort()}` }, tuning: { sms: { retryDelayMs: 50 } } });

    const reports = await deliver(b, "m-1");

    expect(reports).toHaveLength(1);
    expect(reports[0]?.body).toMatchObject({ status: "failed", error: { type: "saas", message: expect.stringMatching(/unreachable.*\(5 attempts\)$/) } });
    expect(b.worker.running).toBe(true);
  });

  test("gateway unreachable at first, then back: the never-sent request is retried and delivered once", async () => {
    const port = await closedPort();
    const b = await start({ env: { SMS_API_URL: `http://127.0.0.1:${port}` }, tuning: { sms: { retryDelayMs: 400 } } });
    const res = await b.webhook(outbound("m-1"));
    expect(res.status).toBe(200);
    await waitFor(() => b.core.jobs.get("m-1")?.state === "sending");
    await sleep(100); // the first attempt (refused) is long over; the next comes 400 ms after it
    const back = await gatewayOn(port);
    try {
      await waitFor(() => b.core.jobs.get("m-1")?.state === "done", 10_000);
      expect(b.crm.statusReports().map((r) => r.body)).toEqual([{ status: "delivered" }]);
      expect(back.bodies).toEqual([{ to: "09171234567", message: "hello m-1" }]);
    } finally {
      await back.close();
    }
  });
});

describe("status reports to the CRM", () => {
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

    expect(b.core.jobs.get("m-1")?.state).toBe(state);
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

    expect(b.core.jobs.get("m-1")?.state).toBe("done");
    expect(reports).toHaveLength(down + 1);
    expect(sends(b)).toHaveLength(1);
  });

  test("a location with no record: no SMS, no report, logged; the next message is still delivered", async () => {
    const b = await start();

    await deliver(b, "m-ghost", { locationId: "loc-ghost" });
    expect(b.core.jobs.get("m-ghost")?.state).toBe("dead");
    expect(b.logs.join("")).toContain("no token for location: loc-ghost");

    const reports = await deliver(b, "m-ok");
    expect(reports.map((r) => r.body)).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent().map((s) => s.message)).toEqual(["hello m-ok"]);
    expect(b.crm.statusReports().map((r) => r.messageId)).toEqual(["m-ok"]);
  });

  test("a job a crash left in 'sending' is reported failed after restart and never resent", async () => {
    const b = await start({ worker: false });
    const res = await b.webhook(outbound("m-1"));
    expect(res.status).toBe(200);
    const job = b.core.jobs.get("m-1");
    expect(job?.state).toBe("queued");
    expect(b.core.jobs.claimForSending(job?.id ?? -1, Date.now())).toBe(true);

    b.worker.start();
    await waitFor(() => b.core.jobs.get("m-1")?.state === "done");

    expect(sends(b)).toEqual([]);
    expect(b.crm.statusReports().map((r) => r.body)).toEqual([
      { status: "failed", error: { code: expect.any(String), type: "saas", message: "delivery unknown after restart" } },
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
      bodies.push(JSON.parse(raw));
      res.writeHead(200, { "content-type": "application/json" });
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
    const bridge = await startBridge();
    try {
      await bridge.install("loc-1");
      const first = bridge.core.tokens.get("loc-1")!.accessToken;
      bridge.crm.on("PUT /conversations/messages/:messageId/status", (req) =>
        req.headers.authorization === `Bearer ${first}` ? jsonResponse({ message: "Invalid JWT" }, 401) : jsonResponse({ success: true }),
      );
      expect((await bridge.webhook(outbound("m-401"))).status).toBe(200);
      await waitFor(() => bridge.core.jobs.get("m-401")?.state === "done");
      const reports = bridge.crm.statusReports();
      expect(reports.map((r) => r.authorization)).toEqual([`Bearer ${first}`, `Bearer ${bridge.core.tokens.get("loc-1")!.accessToken}`]);
      expect(bridge.crm.received("POST /oauth/token").filter((r) => r.body.includes("refresh_token"))).toHaveLength(1);
      expect(bridge.gateway.sent()).toHaveLength(1);
    } finally {
      await bridge.close();
    }
  });

  test("always 401 (a missing scope, say): ONE refresh for all of the location's reports, not one per try", async () => {
    const bridge = await startBridge({ tuning: { reportAttempts: 4 } });
    try {
      await bridge.install("loc-1");
      bridge.crm.on("PUT /conversations/messages/:messageId/status", () => jsonResponse({ message: "The token is not authorized for this scope." }, 401));
      for (const id of ["m-a", "m-b", "m-c"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
      await waitFor(() => ["m-a", "m-b", "m-c"].every((id) => bridge.core.jobs.get(id)?.state === "dead"), 10_000);

      expect(bridge.crm.statusReports()).toHaveLength(3 * 4); // every report tried reportAttempts times
      expect(bridge.crm.received("POST /oauth/token").filter((r) => r.body.includes("refresh_token"))).toHaveLength(1);
      expect(bridge.gateway.sent()).toHaveLength(3);
    } finally {
      await bridge.close();
    }
  });
});
