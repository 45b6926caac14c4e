import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";

const WEBHOOKS = 1000;
const CRASHES = 5;

let e2e: E2E;
let server: Serve | undefined;

/** Figures of the last run, printed for docs/RELIABILITY.md. */
const figures = { sent: 0, acknowledged: 0, crashes: 0, lost: 0, duplicated: 0, unknown: 0 };

beforeAll(async () => {
  // This fake gateway has no rate limit: let bridge send faster than Cast's default, so
  // 1,000 messages drain within the test's time.
  e2e = await e2eSetup("crash", { CAST_MESSAGES_PER_SECOND: "100", CAST_REQUESTS_PER_SECOND: "100" });
  // A slow gateway keeps many sends in flight when the server is killed.
  e2e.gateway.on(SEND, async () => {
    await sleep(20 + Math.random() * 60);
    return e2e.gateway.accept();
  });
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

async function post(url: string, messageId: string): Promise<boolean> {
  try {
    const res = await e2e.webhook(url, outbound(messageId, { message: `crash test ${messageId}` }));
    return res.status === 200;
  } catch {
    return false; // the server was down: not acknowledged, so HighLevel would retry it
  }
}

test(`kill -9 during ${WEBHOOKS} webhooks: nothing acknowledged is lost, nothing is sent twice, no "delivery unknown"`, async () => {
  const { crm, gateway, env, dir } = e2e;
  server = await startServe(env, dir);
  crm.grantLocation("code-crash", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-crash`)).status).toBe(200);

  const acknowledged = new Set<string>();
  let next = 0;
  const sender = async () => {
    while (next < WEBHOOKS) {
      const id = `crash-${next++}`;
      figures.sent++;
      // Retry like HighLevel would, until this server instance acknowledges it.
      const giveUp = Date.now() + 20_000;
      while (!acknowledged.has(id) && Date.now() < giveUp) {
        if (server && (await post(server.url, id))) acknowledged.add(id);
        else await sleep(25); // HighLevel's pause before it sends a webhook again
      }
    }
  };
  const senders = Promise.all(Array.from({ length: 8 }, sender));

  for (let crash = 0; crash < CRASHES; crash++) {
    await sleep(300 + Math.random() * 400); // the server runs for a while: the kill comes at no chosen moment
    const victim = server!;
    server = undefined;
    victim.child.kill("SIGKILL");
    await exited(victim.child);
    figures.crashes++;
    server = await startServe(env, dir);
  }
  await senders;
  figures.acknowledged = acknowledged.size;
  expect(acknowledged.size).toBe(WEBHOOKS);

  // Every acknowledged message reaches a terminal status report.
  await waitFor(() => {
    const reported = new Set(crm.statusReports().map((r) => r.messageId));
    return [...acknowledged].every((id) => reported.has(id));
  }, 60_000);

  const statuses = new Map<string, Set<string>>();
  for (const r of crm.statusReports()) {
    statuses.set(r.messageId, (statuses.get(r.messageId) ?? new Set()).add(JSON.stringify(r.body)));
  }
  const texts = gateway.sent().map((s) => s.message);
  const sentCount = new Map<string, number>();
  for (const t of texts) sentCount.set(t, (sentCount.get(t) ?? 0) + 1);

  figures.lost = [...acknowledged].filter((id) => !statuses.has(id)).length;
  figures.duplicated = [...sentCount.values()].filter((n) => n > 1).length;
  figures.unknown = [...statuses.values()].filter((s) => [...s].some((b) => b.includes("delivery unknown"))).length;

  expect(figures.lost).toBe(0);
  expect(figures.duplicated).toBe(0);
  // Sends a kill interrupted are sent again with their idempotency key: none is left unknown.
  expect(figures.unknown).toBe(0);
  for (const [id, reported] of statuses) {
    // One terminal status per message (a report repeated after a crash repeats the same status).
    expect(reported.size, `${id} got different statuses: ${[...reported].join(" / ")}`).toBe(1);
    const status = JSON.parse([...reported][0]!) as { status: string };
    // Delivered means the gateway took it exactly once.
    if (status.status === "delivered") expect(sentCount.get(`crash test ${id}`)).toBe(1);
  }
  console.log(`crash test: ${JSON.stringify(figures)}`);

  server!.child.kill("SIGTERM");
  expect(await exited(server!.child)).toBe(0);
  server = undefined;
}, 180_000);

