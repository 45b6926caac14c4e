import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { encryptUser, highLevelUser, SHARED_SECRET } from "../helpers/app-payload.ts";
import { e2eSetup, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { postgresMissing, startPostgres, type Postgres } from "../helpers/postgres.ts";

// Three `bridge serve` on one PostgreSQL database (docs/operations.md, "Several servers on one PostgreSQL database"):
// what one server knows, the others know: a settings-page session, a token being renewed.

const missing = postgresMissing();
let postgres: Postgres | undefined;
let e2e: E2E;
const servers: Serve[] = [];

beforeAll(async () => {
  if (missing) return;
  postgres = await startPostgres();
  e2e = await e2eSetup("servers-sessions", { DATABASE_URL: postgres.url, CRM_SHARED_SECRET: SHARED_SECRET });
  for (let n = 0; n < 3; n++) servers.push(await startServe({ ...e2e.env, CAST_LOCAL_ADDRESS: `127.0.0.${n + 2}` }, e2e.dir));
}, 60_000);

afterAll(async () => {
  for (const server of servers) server.child.kill("SIGKILL");
  await e2e?.close();
  postgres?.stop();
});

const run = missing && process.env.CI !== "true" ? test.skip : test;


/** GET /app/api/settings on `server` with a session token: the simplest call a session allows. */
function settings(server: Serve, token: string) {
  return fetch(`${server.url}/app/api/settings`, { headers: { authorization: `Bearer ${token}` } });
}

run("a settings-page session opened on one server works on the other two", async () => {
  if (missing) throw new Error(missing);
  e2e.crm.grantLocation("code-page", "loc-page");
  expect((await fetch(`${servers[0]!.url}/oauth-callback?code=code-page`)).status).toBe(200);
  const res = await fetch(`${servers[0]!.url}/app/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ payload: encryptUser(highLevelUser({ activeLocation: "loc-page" })) }),
  });
  expect(res.status).toBe(200);
  const { token } = (await res.json()) as { token: string };
  for (const server of servers) {
    const answer = await settings(server, token);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ location_id: "loc-page" });
  }
  for (const server of servers) expect((await settings(server, `${token}x`)).status).toBe(401);
});

run("three servers needing one location's token renewed at once make one refresh call", async () => {
  if (missing) throw new Error(missing);
  // A token that expires in a minute: inside the renewal margin, so each server renews it before use.
  const old = `Bearer ${String(e2e.crm.grantLocation("code-renew", "loc-renew", { expires_in: 60 }).access_token)}`;
  expect((await fetch(`${servers[0]!.url}/oauth-callback?code=code-renew`)).status).toBe(200);
  const refreshes = () => e2e.crm.received("POST /oauth/token").filter((r) => new URLSearchParams(r.body).get("grant_type") === "refresh_token");
  // The first refresh is answered late: the other servers need the token while it runs.
  const release = e2e.crm.holdRefreshes();
  // Three webhooks to each server: each sends some (any server may claim a job), and each
  // sent message's report needs the location's token.
  const ids = Array.from({ length: 9 }, (_, i) => `renew-${i}`);
  for (const [i, id] of ids.entries()) {
    const answer = await e2e.webhook(servers[i % 3]!.url, outbound(id, { locationId: "loc-renew", message: `renew ${id}` }));
    expect(answer.status).toBe(200);
  }
  await waitFor(() => refreshes().length >= 1 && e2e.gateway.sent().filter((s) => s.message.startsWith("renew ")).length === ids.length, 20_000);
  await sleep(3000); // every server has asked for the token by now, and waits for the one renewal
  release();
  const reports = await waitFor(() => {
    const mine = e2e.crm.statusReports().filter((r) => ids.includes(r.messageId));
    return mine.length >= ids.length && mine;
  }, 30_000);
  const senders = e2e.gateway.calls().filter((c) => c.body.includes("renew renew-")).map((c) => c.remoteAddress);
  console.log(`servers renewal: ${JSON.stringify({ refreshes: refreshes().length, sentFrom: [...new Set(senders)].sort(), reports: reports.length })}`);
  // Which server claims which job is the shared queue's choice: at least two of them sent, and so needed the token.
  expect(new Set(senders).size).toBeGreaterThanOrEqual(2);
  expect(refreshes()).toHaveLength(1);
  // Every server reported with the renewed token, none with the old one.
  const used = new Set(reports.map((r) => r.authorization));
  expect(used.size).toBe(1);
  expect(used.has(old)).toBe(false);
  expect(reports.map((r) => r.body.status)).toEqual(ids.map(() => "delivered"));
});
