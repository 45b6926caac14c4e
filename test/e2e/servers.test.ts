import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startBalancer } from "../helpers/balancer.ts";
import { e2eSetup, exited, runWithStdin, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { postgresMissing, startPostgres, type Postgres } from "../helpers/postgres.ts";

// Three `bridge serve` on one PostgreSQL database behind a balancer (docs/operations.md),
// a fake Cast that limits per source address and per key as Cast does (docs/services/cast-api.md,
// "Limits"), and servers killed with kill -9 while HighLevel's webhooks come in.

const WEBHOOKS = 1000;
const KILLS = 3;
const KEYS = 10;
/** Cast's default per key (docs/services/cast-api.md, "Limits"): messages a second. */
const KEY_RATE = 10;

const missing = postgresMissing();
let postgres: Postgres | undefined;
let e2e: E2E;
const servers: (Serve | undefined)[] = [];
/** Every server started, killed ones included: their logs tell the rescues. */
const started: Serve[] = [];

beforeAll(async () => {
  if (missing) return;
  postgres = await startPostgres();
  e2e = await e2eSetup("servers", { DATABASE_URL: postgres.url });
  // Cast's limits (docs/services/cast-api.md, "Limits"): 30 requests a second per source address, burst 50,
  // one bucket per address; 10 messages a second per key, whose burst Cast does not give:
  // one second's worth, the least a bucket of that rate holds.
  e2e.gateway.limit(KEY_RATE, KEY_RATE);
  e2e.gateway.limitRequests(30, 50);
  e2e.gateway.on(SEND, async () => {
    await sleep(20 + Math.random() * 60); // a slow gateway keeps sends in flight at each kill
    return e2e.gateway.accept();
  });
}, 60_000);

afterAll(async () => {
  for (const server of servers) server?.child.kill("SIGKILL");
  await e2e?.close();
  postgres?.stop();
});

/** Server `n`, with its own source address towards Cast. */
async function start(n: number): Promise<Serve> {
  const server = await startServe({ ...e2e.env, CAST_LOCAL_ADDRESS: `127.0.0.${n + 2}` }, e2e.dir);
  started.push(server);
  return server;
}

const run = missing && process.env.CI !== "true" ? test.skip : test;

run(`three servers, kill -9 ${KILLS} times during ${WEBHOOKS} webhooks: none lost, none doubled, no key over its rate`, async () => {
  if (missing) throw new Error(missing);
  const { crm, gateway } = e2e;
  const limits = gateway.limitRequests(30, 50);
  const begun = Date.now();
  for (let n = 0; n < 3; n++) servers[n] = await start(n);
  const balancer = await startBalancer(() => servers.flatMap((s) => (s ? [s.url] : [])));
  try {
    for (let k = 0; k < KEYS; k++) {
      crm.grantLocation(`code-${k}`, `loc-${k}`);
      expect((await fetch(`${balancer.url}/oauth-callback?code=code-${k}`)).status).toBe(200);
    }
    const keys = Array.from({ length: KEYS }, (_, k) => runWithStdin(e2e.env, e2e.dir, `cast-key-${k}\n`, ["config", "set", `loc-${k}`, "--sms-api-key", "-"]));
    for (const set of await Promise.all(keys)) expect(set.code, set.err).toBe(0);
    const phases = { setup: since(begun), acknowledged: 0, reported: 0 };

    const acknowledged = new Set<string>();
    let next = 0;
    const sender = async () => {
      while (next < WEBHOOKS) {
        const n = next++;
        const id = `servers-${n}`;
        const body = outbound(id, { locationId: `loc-${n % KEYS}`, message: `servers test ${id}` });
        // HighLevel retries only on a 429: the balancer answers it when no server answers.
        for (let tries = 0; !acknowledged.has(id) && tries < 100; tries++) {
          const res = await e2e.webhook(balancer.url, body).catch(() => undefined);
          if (res?.status === 200) acknowledged.add(id);
          else await sleep(50);
        }
      }
    };
    const senders = Promise.all(Array.from({ length: 8 }, sender));
    for (let kill = 0; kill < KILLS; kill++) {
      await sleep(1500 + Math.random() * 1000);
      const n = kill % 3;
      const victim = servers[n]!;
      servers[n] = undefined;
      victim.child.kill("SIGKILL");
      await exited(victim.child);
      servers[n] = await start(n);
    }
    await senders;
    phases.acknowledged = since(begun);
    expect(acknowledged.size).toBe(WEBHOOKS);

    // A killed server's sends are rescued once its heartbeat is stale (about a minute).
    await waitFor(() => {
      const reported = new Set(crm.statusReports().map((r) => r.messageId));
      return [...acknowledged].every((id) => reported.has(id));
    }, 150_000);
    phases.reported = since(begun);

    const statuses = new Map<string, Set<string>>();
    for (const r of crm.statusReports()) statuses.set(r.messageId, (statuses.get(r.messageId) ?? new Set()).add(JSON.stringify(r.body)));
    const sentCount = new Map<string, number>();
    for (const s of gateway.sent()) sentCount.set(s.message, (sentCount.get(s.message) ?? 0) + 1);
    const figures = {
      acknowledged: acknowledged.size,
      sent: gateway.sent().length,
      calls: gateway.calls().length,
      lost: [...acknowledged].filter((id) => !statuses.has(id)).length,
      doubled: [...sentCount.values()].filter((count) => count > 1).length,
      unknown: [...statuses.values()].filter((s) => [...s].some((b) => b.includes("delivery unknown"))).length,
      // No key over its rate: the fake's per-key bucket never refused a send. Not a count of
      // messages per calendar second: a token bucket lets burst + rate through in one second
      // (a full bucket, then its refill), which Cast allows, and a count would call it over.
      // The sends a kill caught mid-way, taken over by the leader with their idempotency keys.
      rescued: started.flatMap((s) => [...s.log.matchAll(/(\d+) message\(s\) were being sent when server/g)]).reduce((sum, m) => sum + Number(m[1]), 0),
      keyRefusals: limits.byKey,
      addressRefusals: limits.byAddress,
      addresses: [...new Set(gateway.calls().map((c) => c.remoteAddress))].sort(),
      reported: tally([...statuses.values()].flatMap((s) => [...s].map((b) => (JSON.parse(b) as { status: string }).status))),
      seconds: phases,
    };
    console.log(`servers test: ${JSON.stringify({ ...figures, balancer: balancer.tally })}`);
    expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, keyRefusals: 0 });
    for (const [id, reported] of statuses) expect(reported.size, `${id}: ${[...reported].join(" / ")}`).toBe(1);
  } finally {
    await balancer.close();
  }
}, 300_000);

/** How many times each value occurs. */
function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** Whole seconds since `start` (Date.now()). */
function since(start: number): number {
  return Math.round((Date.now() - start) / 1000);
}
