import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { describe, expect, test } from "vitest";
import { BODY_LIMIT, UNSIGNED_BODY_BUDGET } from "../../src/server/body.ts";
import { bridgePerTest, outbound, signBody, waitFor, type Bridge } from "../helpers/bridge.ts";
import { jsonResponse, rawExchange } from "../helpers/http.ts";

/**
 * Limits before authentication, through real sockets against the real app
 * (docs/http.md, "Limits before anyone is authenticated").
 */

/** A raw connection that writes `data` and then holds; it records what comes back and when it closes. */
function hold(url: string, data: string | Buffer = "") {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  const conn = { socket, answer: "", closedAt: 0, closed: new Promise<void>((resolve) => socket.once("close", () => resolve())) };
  socket.once("close", () => (conn.closedAt = Date.now()));
  socket.on("data", (chunk: Buffer) => (conn.answer += chunk.toString("latin1")));
  socket.on("error", () => {}); // a reset after the server's answer is one way of closing
  if (data.length) socket.write(data);
  return conn;
}

const webhookHead = (framing: string) => `POST /webhooks/crm HTTP/1.1\r\nhost: bridge\r\ncontent-type: application/json\r\n${framing}\r\n`;
const declared = (length: number) => webhookHead(`content-length: ${length}\r\n`);
const chunked = webhookHead("transfer-encoding: chunked\r\n");
const chunk = (bytes: number) => `${bytes.toString(16)}\r\n${"x".repeat(bytes)}\r\n`;

async function expectAccepted(res: Response) {
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: "accepted" });
}

describe("a connection that sends nothing", () => {
  const start = bridgePerTest();

  test("is closed by the server within 10 s (serve's default)", async () => {
    const bridge = await start({ worker: false });
    const opened = Date.now();
    const silent = hold(bridge.url);
    await silent.closed;
    expect(silent.answer).toBe("");
    expect(silent.closedAt - opened).toBeLessThan(10_000);
  }, 15_000);

  test("is closed, while a request whose handler outlasts that silence is still answered", async () => {
    const bridge = await start({ worker: false, timeouts: { idleMs: 200 } });
    const { crm } = bridge;
    crm.grantLocation("code-slow", "loc-slow");
    const answer = crm.codes.get("code-slow");
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    crm.on("POST /oauth/token", async () => {
      await released;
      return jsonResponse(answer);
    });

    const install = bridge.fetch("/oauth-callback?code=code-slow");
    await waitFor(() => crm.received("POST /oauth/token").length === 1);
    // The install now waits on the CRM: nothing moves on its connection either way.
    // A silent connection opened now is closed once the idle time is over; only then
    // does the CRM answer.
    await hold(bridge.url).closed;
    release();
    const res = await install;
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("bridge is installed");
    expect(await bridge.core.tokens.get("loc-slow")).toBeDefined();
  });
});

describe("unsigned bodies share one memory budget", () => {
  const start = bridgePerTest();
  const atLimit = UNSIGNED_BODY_BUDGET / BODY_LIMIT;

  test("uploads past the budget get 429 with Retry-After and a closed connection; hang-ups give it all back", async () => {
    const bridge = await start({ worker: false });
    // Each declares a body at the limit, sends one byte of it and holds: the declared
    // length is reserved up front, so the budget is spent before the bytes come.
    const held = Array.from({ length: atLimit }, () => hold(bridge.url, `${declared(BODY_LIMIT)}{`));
    await waitFor(() => bridge.bodyBudget.used === UNSIGNED_BODY_BUDGET);

    const refused = await rawExchange(bridge.url, `${declared(1000)}{"type":`);
    expect(refused).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused).toMatch(/\r\nretry-after: \d+\r\n/i);
    expect(refused).toMatch(/\r\nconnection: close\r\n/i);
    expect(refused).not.toMatch(/\(open\)$/); // closed: the rest of that upload is never read
    // A real webhook now is refused the same way, and HighLevel retries a 429.
    const busy = await bridge.webhook(outbound("m-busy"));
    expect(busy.status).toBe(429);
    expect(busy.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(held.every((conn) => conn.answer === "")).toBe(true);

    for (const conn of held) conn.socket.destroy();
    await waitFor(() => bridge.bodyBudget.used === 0);
    await expectAccepted(await bridge.webhook(outbound("m-after")));
    expect(bridge.bodyBudget.used).toBe(0);
  });

  test("a chunked upload is counted as its bytes arrive, and refused when they no longer fit", async () => {
    const bridge = await start({ worker: false });
    // All but one body's worth reserved up front by uploads that hold...
    const held = Array.from({ length: atLimit - 1 }, () => hold(bridge.url, `${declared(BODY_LIMIT)}{`));
    await waitFor(() => bridge.bodyBudget.used === UNSIGNED_BODY_BUDGET - BODY_LIMIT);
    // ...then one chunked upload takes 200 KiB of the last 256 KiB, as it sends them.
    const first = hold(bridge.url, chunked);
    for (let i = 0; i < 4; i++) first.socket.write(chunk(50 * 1024));
    await waitFor(() => bridge.bodyBudget.used === UNSIGNED_BODY_BUDGET - BODY_LIMIT + 200 * 1024);
    // A second one fits its first 50 KiB, not the next 10.
    const second = hold(bridge.url, chunked + chunk(50 * 1024));
    await waitFor(() => bridge.bodyBudget.used === UNSIGNED_BODY_BUDGET - 6 * 1024);
    second.socket.write(chunk(10 * 1024));
    await second.closed;
    expect(second.answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(second.answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(first.answer).toBe("");

    for (const conn of [...held, first]) conn.socket.destroy();
    await waitFor(() => bridge.bodyBudget.used === 0);
  });

  test("every way a webhook ends gives its share back", async () => {
    const bridge = await start({ worker: false });
    const raw = JSON.stringify(outbound("m-1"));
    const signature = signBody(raw, bridge.signingKey);
    await expectAccepted(await bridge.webhook(undefined, { raw }));
    expect((await bridge.webhook(outbound("m-2"), { key: null })).status).toBe(401);
    const notJson = "{not json";
    const signedGarbage = await bridge.fetch("/webhooks/crm", {
      method: "POST",
      headers: { "x-ghl-signature": signBody(notJson, bridge.signingKey) },
      body: notJson,
    });
    expect(signedGarbage.status).toBe(400);
    expect(await rawExchange(bridge.url, declared(BODY_LIMIT + 1))).toMatch(/^HTTP\/1\.1 413 /);
    const big = "x".repeat(BODY_LIMIT + 1);
    const tooBig = await bridge.fetch("/webhooks/crm", { method: "POST", body: new Blob([big]).stream(), duplex: "half" } as RequestInit);
    expect(tooBig.status).toBe(413);
    expect(bridge.bodyBudget.used).toBe(0);

    // Hang-ups mid-body, with a declared length and chunked.
    const cut = [
      hold(bridge.url, `${webhookHead(`x-ghl-signature: ${signature}\r\ncontent-length: ${raw.length}\r\n`)}${raw.slice(0, 20)}`),
      hold(bridge.url, `${chunked}${chunk(100)}`),
    ];
    await waitFor(() => bridge.bodyBudget.used === raw.length + 100);
    for (const conn of cut) conn.socket.destroy();
    await waitFor(() => bridge.bodyBudget.used === 0);
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });
});

describe("OAuth code exchanges", () => {
  const start = bridgePerTest();
  const busy = { status: 503, body: "too many installs in progress; retry in a moment", retryAfter: "5" };

  /** A fake token endpoint that holds every made-up code until released; real codes pass at once. */
  function holdMadeUpCodes(crm: Bridge["crm"]) {
    const calls = { now: 0, peak: 0 };
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    crm.on("POST /oauth/token", async (req) => {
      const answer = crm.codes.get(new URLSearchParams(req.body).get("code") ?? "");
      calls.peak = Math.max(calls.peak, ++calls.now);
      if (!answer) await released;
      calls.now--;
      return answer ? jsonResponse(answer) : jsonResponse({ error: "invalid_grant" }, 400);
    });
    return { calls, release };
  }

  /** `n` callbacks with made-up codes at once; each answer is recorded as it comes. */
  function flood(bridge: Bridge, n: number, headers: (i: number) => Record<string, string> = () => ({})) {
    const answers: { status: number; body: string; retryAfter: string | null }[] = [];
    const done = Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await bridge.fetch(`/oauth-callback?code=made-up-${i}`, { headers: headers(i) });
        answers.push({ status: res.status, body: await res.text(), retryAfter: res.headers.get("retry-after") });
      }),
    );
    return { answers, done };
  }

  test.each<{ from: string; env: Record<string, string>; headers: (i: number) => Record<string, string> }>([
    { from: "one address", env: { TRUST_PROXY: "1" }, headers: () => ({}) },
    // Behind a trusted proxy, each address of one IPv6 /64 is the same client.
    { from: "one IPv6 /64, a new address each", env: { TRUST_PROXY: "1" }, headers: (i: number) => ({ "x-forwarded-for": `2001:db8:7:7::${i + 1}` }) },
  ])("a flood of 50 made-up codes from $from makes one token call at a time; 2 wait, the rest are told to retry", async ({ env, headers }) => {
    const bridge = await start({ worker: false, env });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    const { answers, done } = flood(bridge, 50, headers);
    await waitFor(() => answers.length === 47 && calls.now === 1);
    expect(answers).toEqual(Array(47).fill(busy));

    release();
    await done;
    expect(calls.peak).toBe(1);
    expect(bridge.crm.received("POST /oauth/token")).toHaveLength(3);
    expect(answers.filter((a) => a.status === 500 && a.body.startsWith("token exchange failed: "))).toHaveLength(3);
  });

  test("a browser told to retry gets a page saying so, still 503 with Retry-After", async () => {
    const bridge = await start({ worker: false, env: { TRUST_PROXY: "1" } });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    // One running and two waiting is one client's share: the fourth is turned away.
    const { answers, done } = flood(bridge, 4, () => ({ accept: "text/html" }));
    await waitFor(() => answers.length === 1 && calls.now === 1);
    expect(answers[0]).toMatchObject({ status: 503, retryAfter: "5" });
    expect(answers[0]!.body).toContain("<p>Too many installs are in progress at once.</p>");
    expect(answers[0]!.body).toContain("Reload this page in a minute.");
    release();
    await done;
  });

  test("a flood of made-up codes from one address does not keep a real install from another address out", async () => {
    const bridge = await start({ worker: false, env: { TRUST_PROXY: "1" } });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    const { answers, done } = flood(bridge, 50);
    await waitFor(() => answers.length === 47 && calls.now === 1);

    bridge.crm.grantLocation("code-loc-real", "loc-real");
    const real = await getFrom(`${bridge.url}/oauth-callback?code=code-loc-real`, "127.0.0.2");
    expect(real.status).toBe(200);
    expect(real.body).toContain("bridge is installed");
    expect(await bridge.core.tokens.get("loc-real")).toBeDefined();

    release();
    await done;
    expect(calls.peak).toBe(2);
  });

  test("made-up codes from 20 /64s of one IPv6 /48 make at most 2 token calls at once, 4 wait; another network's install goes through", async () => {
    const bridge = await start({ worker: false, env: { TRUST_PROXY: "1" } });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    const { answers, done } = flood(bridge, 20, (i) => ({ "x-forwarded-for": `2001:db8:7:${i + 1}::1` }));
    await waitFor(() => answers.length === 14 && calls.now === 2);
    expect(answers).toEqual(Array(14).fill(busy));

    bridge.crm.grantLocation("code-loc-real", "loc-real");
    const real = await bridge.fetch("/oauth-callback?code=code-loc-real", { headers: { "x-forwarded-for": "2001:db8:8::1" } });
    expect(real.status).toBe(200);
    release();
    await done;
    expect(calls.peak).toBe(3); // the network's two and the real install
  });

  test("behind a proxy without TRUST_PROXY, made-up codes share the whole gate, not one place; serve warns once to set TRUST_PROXY=1", async () => {
    const bridge = await start({ worker: false });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    const proxied = (i: number) => ({ "x-forwarded-for": `198.51.100.${i + 1}` });
    const { answers, done } = flood(bridge, 3, proxied);
    await waitFor(() => calls.now === 3);

    bridge.crm.grantLocation("code-loc-real", "loc-real");
    const real = await bridge.fetch("/oauth-callback?code=code-loc-real", { headers: proxied(9) });
    expect(real.status).toBe(200);
    release();
    await done;
    expect(answers.filter((a) => a.status === 503)).toEqual([]);
    const warnings = bridge.logs.filter((line) => line.includes("set TRUST_PROXY=1"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("a request from 127.0.0.1 came through a reverse proxy (it sent X-Forwarded-For), but TRUST_PROXY is off");
  });

  test("made-up codes from 50 clients make at most 4 token calls at once; 16 wait, the rest are told to retry", async () => {
    const bridge = await start({ worker: false, env: { TRUST_PROXY: "1" } });
    const { calls, release } = holdMadeUpCodes(bridge.crm);
    const { answers, done } = flood(bridge, 50, (i) => ({ "x-forwarded-for": `198.51.100.${i + 1}` }));
    await waitFor(() => answers.length === 30 && calls.now === 4);
    expect(answers).toEqual(Array(30).fill(busy));

    release();
    await done;
    expect(calls.peak).toBe(4);
    expect(bridge.crm.received("POST /oauth/token")).toHaveLength(20);
    expect(answers.filter((a) => a.status === 500 && a.body.startsWith("token exchange failed: "))).toHaveLength(20);

    // The flood is over: a real install goes through.
    await bridge.install("loc-real");
    expect(await bridge.core.tokens.get("loc-real")).toBeDefined();
  });
});

/** A GET sent from `localAddress` (another loopback address: another client). */
function getFrom(url: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}
