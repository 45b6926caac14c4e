import { statSync } from "node:fs";
import { request } from "node:http";
import { createApp } from "../../src/server/app.ts";
import { listen } from "../../src/server/listen.ts";
import { expect, test } from "vitest";
import { ADMIN_KEY, CLIENT_SECRET, GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { rawExchange } from "../helpers/http.ts";

const start = bridgePerTest();

/** GET /api/admin/locations from a given local address, answered with its status. */
function getFrom(bridge: Bridge, localAddress: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${bridge.url}/api/admin/locations`, { localAddress, headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Sends `n` wrong admin keys, each answered 401, 429 or as `expected` says. */
async function wrongKeys(bridge: Bridge, n: number, headers: Record<string, string> = {}, expected?: number) {
  for (let i = 0; i < n; i++) {
    const res = await bridge.fetch("/api/admin/locations", { headers: { authorization: `Bearer wrong-key-${i}`, ...headers } });
    if (expected) expect(res.status).toBe(expected);
  }
}

test("ten wrong admin keys from one address, then that address's wrong keys get 429", async () => {
  const bridge = await start();
  await wrongKeys(bridge, 10, {}, 401);
  const blocked = await bridge.fetch("/api/admin/locations", { headers: { authorization: "Bearer wrong" } });
  expect(blocked.status).toBe(429);
  expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(await blocked.json()).toEqual({ error: "too many failed authentication attempts; retry later" });
  const missing = await bridge.fetch("/api/admin/locations");
  expect(missing.status).toBe(429);
});

test("the right admin key passes after 50 failures from the same address", async () => {
  const bridge = await start();
  await wrongKeys(bridge, 50);
  const res = await bridge.admin("/api/admin/locations");
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ locations: [] });
  // ...and does not open the door for the wrong keys after it.
  expect((await bridge.fetch("/api/admin/locations", { headers: { authorization: "Bearer wrong" } })).status).toBe(429);
});

test("the limit is per minute: a client over it gets 401 again once its failures are a minute old", async () => {
  let clock = Date.parse("2025-03-01T08:00:00.000Z");
  const bridge = await start({ now: () => clock, worker: false });
  await wrongKeys(bridge, 10, {}, 401);
  await wrongKeys(bridge, 5, {}, 429);
  clock += 59_999;
  await wrongKeys(bridge, 1, {}, 429);
  clock += 1;
  await wrongKeys(bridge, 10, {}, 401);
  await wrongKeys(bridge, 1, {}, 429);
});

test("X-Forwarded-For is not trusted by default: a new forged value per try does not escape the 429", async () => {
  const bridge = await start();
  for (let i = 0; i < 10; i++) {
    const res = await bridge.fetch("/api/admin/locations", { headers: { authorization: `Bearer wrong-${i}`, "x-forwarded-for": `10.0.0.${i}` } });
    expect(res.status).toBe(401);
  }
  const res = await bridge.fetch("/api/admin/locations", { headers: { authorization: "Bearer wrong", "x-forwarded-for": "10.0.1.1" } });
  expect(res.status).toBe(429);
});

test("with TRUST_PROXY, failures count per forwarded client: one client cannot lock out another", async () => {
  const bridge = await start({ env: { TRUST_PROXY: "1" } });
  const from = (client: string, authorization: string) =>
    bridge.fetch("/api/admin/locations", { headers: { authorization, "x-forwarded-for": client } });
  // The proxy appends the address it saw; what the client sent before it may be forged.
  for (let i = 0; i < 10; i++) expect((await from(`10.0.0.${i}, 203.0.113.7`, `Bearer wrong-${i}`)).status).toBe(401);

  expect((await from("203.0.113.7", "Bearer wrong")).status).toBe(429);
  expect((await from("198.51.100.2", "Bearer wrong")).status).toBe(401);
  expect((await from("203.0.113.7", `Bearer ${ADMIN_KEY}`)).status).toBe(200);
});

test("with TRUST_PROXY, an IPv6 client's failures count per /64: a new address in it does not escape the 429", async () => {
  const bridge = await start({ env: { TRUST_PROXY: "1" } });
  const from = (client: string, authorization: string) =>
    bridge.fetch("/api/admin/locations", { headers: { authorization, "x-forwarded-for": client } });
  for (let i = 0; i < 10; i++) expect((await from(`2001:db8:1:2::${i + 1}`, `Bearer wrong-${i}`)).status).toBe(401);
  expect((await from("2001:db8:1:2:ffff::9", "Bearer wrong")).status).toBe(429);
  expect((await from("2001:db8:1:3::1", "Bearer wrong")).status).toBe(401);
});

test("with TRUST_PROXY, X-Forwarded-For from a peer not in TRUSTED_PROXIES is ignored", async () => {
  // The proxy is 127.0.0.2, the attacker 127.0.0.1: both are this machine (all of 127/8 is).
  const bridge = await start({ env: { TRUST_PROXY: "1", TRUSTED_PROXIES: "127.0.0.2" } });
  const attacker = (client: string, key: string) => getFrom(bridge, "127.0.0.1", { authorization: `Bearer ${key}`, "x-forwarded-for": client });
  const proxy = (client: string, key: string) => getFrom(bridge, "127.0.0.2", { authorization: `Bearer ${key}`, "x-forwarded-for": client });

  // Naming a victim counts against the attacker's own address, not the victim's...
  for (let i = 0; i < 10; i++) expect(await attacker("203.0.113.7", `wrong-${i}`)).toBe(401);
  expect(await proxy("203.0.113.7", "wrong")).toBe(401);
  // ...and a fresh forged address per try does not escape the limit.
  expect(await attacker("10.0.1.1", "wrong")).toBe(429);
  expect(await attacker("10.0.1.2", ADMIN_KEY)).toBe(200);

  const lines = bridge.logs.filter((line) => line.includes("admin auth failed"));
  expect(lines.filter((line) => line.includes("from 127.0.0.1:")).length).toBeGreaterThan(0);
  expect(lines.filter((line) => line.includes("from 203.0.113.7:"))).toHaveLength(1); // the one the proxy forwarded
  expect(lines.filter((line) => line.includes("from 10.0.1."))).toEqual([]);
});

test("a failed admin login is a warn line naming the client, the path and why, never the key presented", async () => {
  const bridge = await start();
  const guesses = ["guess-do-not-log-4b227777d4dd", `${ADMIN_KEY.slice(0, -1)}`, `${ADMIN_KEY}x`];
  for (const guess of guesses) await bridge.fetch("/api/admin/locations", { headers: { authorization: `Bearer ${guess}` } });
  await bridge.fetch("/api/admin/locations/loc-1/config");
  await bridge.fetch("/api/admin/locations", { headers: { authorization: `Basic ${ADMIN_KEY}` } });

  const lines = bridge.logs.filter((line) => line.includes("admin auth failed"));
  expect(lines).toHaveLength(5);
  for (const line of lines) expect(line).toMatch(/ \[warn\] admin auth failed from 127\.0\.0\.1: /);
  expect(lines[0]).toContain('wrong key on GET "/api/admin/locations"');
  expect(lines[3]).toContain('no Authorization header on GET "/api/admin/locations/loc-1/config"');
  expect(lines[4]).toContain("malformed Authorization header");
  const logs = bridge.logs.join("");
  for (const secret of [...guesses, ADMIN_KEY]) expect(logs).not.toContain(secret.slice(0, 8));
});

test("a flood of failures logs a bounded number of lines: ten per client a minute, a hundred in all", async () => {
  let bridge = await start();
  const failureLines = () => bridge.logs.filter((line) => line.includes("admin auth failed"));
  // A path of its own per try: the logger folds identical lines, which would hide the count.
  for (let i = 0; i < 50; i++) await bridge.fetch(`/api/admin/locations/loc-${i}/config`, { headers: { authorization: "Bearer wrong" } });
  expect(failureLines()).toHaveLength(10);
  expect(failureLines()[9]).toContain("(10 failures within 60 s: its wrong keys now get 429, not logged)");

  // A second bridge, behind a proxy: a hundred clients of ten failures each.
  bridge = await start({ env: { TRUST_PROXY: "1" } });
  for (let i = 0; i < 150; i++) await wrongKeys(bridge, 1, { "x-forwarded-for": `198.51.100.${i}` }, 401);
  expect(failureLines()).toHaveLength(100);
  expect(bridge.logs.filter((line) => line.includes("more than 100 failed admin logins within 60 s"))).toHaveLength(1);
});

sqliteOnly("stats the SQLite file and its -wal")("a full run never writes a token or key to the log, and the database files are 0600", async () => {
  const bridge = await start();
  await bridge.install("loc-1");
  const stored = (await bridge.core.tokens.get("loc-1"))!;
  await bridge.admin("/api/admin/locations/loc-1/config", {
    method: "PUT",
    body: JSON.stringify({ sms_api_key: "location-key-do-not-log-42" }),
  });
  // A token near expiry makes the run include a refresh.
  await bridge.core.tokens.updateTokens("loc-1", stored.accessToken, stored.refreshToken, Date.now() + 60_000, Date.now());
  for (const id of ["s-1", "s-2"]) expect((await bridge.webhook(outbound(id))).status).toBe(200);
  await bridge.fetch("/api/admin/locations", { headers: { authorization: "Bearer wrong" } });
  await waitFor(() => bridge.crm.statusReports().length === 2);
  const refreshed = (await bridge.core.tokens.get("loc-1"))!;
  expect(refreshed.accessToken).not.toBe(stored.accessToken);
  const refreshes = bridge.crm.received("POST /oauth/token").filter((r) => new URLSearchParams(r.body).get("grant_type") === "refresh_token");
  expect(refreshes.map((r) => new URLSearchParams(r.body).get("refresh_token"))).toEqual([stored.refreshToken]);

  const logs = bridge.logs.join("");
  expect(logs).toContain("refreshed the access token of location loc-1"); // that line too is checked below
  const secrets = [
    stored.accessToken,
    stored.refreshToken,
    refreshed.accessToken,
    refreshed.refreshToken,
    "location-key-do-not-log-42",
    GLOBAL_SMS_KEY,
    ADMIN_KEY,
    CLIENT_SECRET,
  ];
  for (const secret of secrets) expect(logs).not.toContain(secret);

  for (const file of [bridge.config.databasePath, `${bridge.config.databasePath}-wal`]) {
    expect(statSync(file).mode & 0o777, file).toBe(0o600);
  }
});

test.each([
  ["headers that never end", "POST /webhooks/crm HTTP/1.1\r\nHost: x\r\nX-Slow: "],
  ["a body that trickles in", "POST /webhooks/crm HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"type\":"],
])("a slow client (%s) is cut off by the server's timeouts", async (_, head) => {
  const bridge = await start();
  const app = createApp({ core: bridge.core });
  const server = await listen(app, "127.0.0.1", 0, { headersMs: 300, requestMs: 600 });
  try {
    const answer = await rawExchange(server.url, head, 3000);
    expect(answer).not.toMatch(/\(open\)$/); // cut off within 3 s
    expect(answer).toMatch(/^HTTP\/1\.1 408|^$/);
  } finally {
    server.server.closeAllConnections();
    await server.close();
  }
});
