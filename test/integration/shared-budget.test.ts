import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, test } from "vitest";
import { createCastClient } from "../../src/core/clients/cast.ts";
import { createLogger } from "../../src/core/log.ts";
import { createScheduler } from "../../src/core/delivery/scheduler.ts";
import { castKeyRate, createSendBudget } from "../../src/core/delivery/send-budget.ts";
import { openDb } from "../../src/db/index.ts";
import type { KeyBudgets } from "../../src/store/contract.ts";
import { openStore } from "../../src/store/open.ts";
import { createPool, migratePostgres } from "../../src/store/postgres/pool.ts";
import { pgKeyBudgets } from "../../src/store/postgres/key-budgets.ts";
import { GatewayError } from "../../src/errors.ts";
import { startFakeGateway, type FakeGateway } from "../helpers/fake-gateway.ts";
import { postgresMissing, startPostgres } from "../helpers/postgres.ts";
import { captureStream } from "../helpers/stream.ts";

// Two servers sending with one Cast key, each with its own address budget and its own
// Cast client, sharing one store's keys' budgets (on SQLite, told it is shared, as
// PostgreSQL's is), against a fake Cast that enforces its 10 messages a second per key.

const KEY = "shared-key-0123456789";
const RUN_MS = 3000;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fakeCast(): Promise<FakeGateway> {
  const gateway = await startFakeGateway();
  cleanups.push(() => gateway.close());
  // Cast's 10 a second; one token of slack in its bucket for arrivals that the network (here
  // a loaded test machine's event loop) bunches together after they left evenly paced.
  gateway.limit(10, 11);
  return gateway;
}

/** One SQLite store's keys' budgets, `shared` as told. */
function keyBudgets(shared: boolean): KeyBudgets {
  const dir = mkdtempSync(join(tmpdir(), "bridge-budgets-"));
  const db = openDb(join(dir, "bridge.db"));
  cleanups.push(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { ...openStore({ encryptionKey: undefined }, db).keyBudgets, shared };
}

/** A server's sending part: its own scheduler (address and key budgets in memory) and Cast client. */
function server(apiUrl: string, budgets: KeyBudgets, requestBurst = 48) {
  const rate = castKeyRate(10);
  const scheduler = createScheduler({ requestsPerSecond: 29.1, requestBurst, messagesPerSecond: rate.perSecond, messageBurst: rate.burst });
  const log = createLogger("error", captureStream([]));
  const budget = createSendBudget({ scheduler, keyBudgets: budgets, rate, ownBudget: () => false, log, now: Date.now });
  return { scheduler, budget, cast: createCastClient({ apiUrl, retries: 0 }) };
}

/** One of a server's workers: sends with KEY as fast as its budgets let it for RUN_MS. */
async function sender(s: ReturnType<typeof server>, end: number, tally: { sent: number; refused: number }): Promise<void> {
  while (Date.now() < end) {
    const wait = await s.budget.take(KEY, "loc-1");
    if (wait > 0) {
      await sleep(Math.min(wait, end - Date.now() + 1));
      continue;
    }
    try {
      await s.cast.send({ apiKey: KEY, to: "09171234567", message: "hello", senderId: "", idempotencyKey: randomUUID() });
      tally.sent++;
    } catch (error) {
      if (!(error instanceof GatewayError) || error.failure !== "rate_limited") throw error;
      tally.refused++;
      s.budget.slowDown(KEY, error.retryAfterMs ?? 1000);
    }
  }
}

/** Two servers, four workers each, sending with one key for RUN_MS; `other`: the second server's view of the store. */
async function twoServers(gateway: FakeGateway, budgets: KeyBudgets, other = budgets) {
  const servers = [server(gateway.url, budgets), server(gateway.url, other)];
  const tally = { sent: 0, refused: 0 };
  const started = performance.now();
  const end = Date.now() + RUN_MS;
  await Promise.all(servers.flatMap((s) => [1, 2, 3, 4].map(() => sender(s, end, tally))));
  return { ...tally, elapsedS: (performance.now() - started) / 1000 };
}

/** Two servers' pools on one throwaway PostgreSQL's schema: each server's own view of the shared key budgets. */
async function onPostgres(): Promise<[KeyBudgets, KeyBudgets]> {
  const server = await startPostgres();
  cleanups.push(() => server.stop());
  const [one, two] = [createPool(server.url), createPool(server.url)];
  cleanups.push(() => one.end(), () => two.end());
  await migratePostgres(one);
  return [pgKeyBudgets(one), pgKeyBudgets(two)];
}

describe("a key's send budget shared by servers", () => {
  test("two servers sharing one store's key budgets (SQLite, told it is shared) never exceed the key's rate at Cast", async () => {
    const gateway = await fakeCast();
    const { sent, refused, elapsedS } = await twoServers(gateway, keyBudgets(true));
    expect(refused).toBe(0);
    expect(gateway.sent().length).toBe(sent);
    expect(sent).toBeLessThanOrEqual(10 + 10 * elapsedS);
    // Both servers together still use the key's whole rate, not half of it.
    expect(sent).toBeGreaterThanOrEqual(castKeyRate(10).sharedBurst + 9.7 * (RUN_MS / 1000) * 0.8);
  });

  const missing = postgresMissing();
  test.skipIf(missing !== undefined)(`two servers on one PostgreSQL never exceed the key's rate at Cast${missing ? ` (${missing})` : ""}`, async () => {
    const gateway = await fakeCast();
    const [one, two] = await onPostgres();
    const { sent, refused, elapsedS } = await twoServers(gateway, one, two);
    expect(refused).toBe(0);
    expect(sent).toBeLessThanOrEqual(10 + 10 * elapsedS);
    expect(sent).toBeGreaterThanOrEqual(castKeyRate(10).sharedBurst + 9.7 * (RUN_MS / 1000) * 0.8);
  });

  test("without sharing it (one server's budgets in memory each) two servers are refused by Cast", async () => {
    const gateway = await fakeCast();
    const { refused } = await twoServers(gateway, keyBudgets(false));
    expect(refused).toBeGreaterThan(0);
  });
});

test("a 429 on a key at one server pauses the key at every server sharing the store", async () => {
  const budgets = keyBudgets(true);
  const [a, b] = [server("http://127.0.0.1:9", budgets), server("http://127.0.0.1:9", budgets)];
  expect(await b.budget.take(KEY, "loc-1")).toBe(0);
  a.budget.slowDown(KEY, 600);
  await sleep(50); // the pause is stored in the background
  const wait = await b.budget.take(KEY, "loc-2");
  expect(wait).toBeGreaterThan(400);
  expect(wait).toBeLessThanOrEqual(600);
});

test("a send the key's shared budget refuses gives back this server's address token", async () => {
  const budgets = keyBudgets(true);
  const [a, b] = [server("http://127.0.0.1:9", budgets), server("http://127.0.0.1:9", budgets, 2)];
  for (let i = 0; i < castKeyRate(10).sharedBurst; i++) expect(await a.budget.take(KEY, "loc-1")).toBe(0);
  // Server b's address allows 2 requests at once; five refused sends took none of them.
  for (let i = 0; i < 5; i++) expect(await b.budget.take(KEY, "loc-2")).toBeGreaterThan(0);
  expect(await b.budget.take("another-key-0123456789", "loc-3")).toBe(0);
  expect(await b.budget.take("another-key-0123456789", "loc-3")).toBe(0);
});

test("a send that lost its job's claim to another server gives its tokens back, there and at every server", async () => {
  const budgets = keyBudgets(true);
  const [a, b] = [server("http://127.0.0.1:9", budgets), server("http://127.0.0.1:9", budgets)];
  for (let i = 0; i < castKeyRate(10).sharedBurst; i++) expect(await a.budget.take(KEY, "loc-1")).toBe(0);
  expect(await b.budget.take(KEY, "loc-2")).toBeGreaterThan(0);
  // Server a lost the claim of its last send: the key's token is the other server's to take.
  a.budget.giveBack(KEY, "loc-1");
  await sleep(50); // given back in the background
  expect(await b.budget.take(KEY, "loc-2")).toBe(0);
  // And the address token: server c's address allows 2 requests at once, and the one whose claim was lost sent nothing.
  const c = server("http://127.0.0.1:9", keyBudgets(true), 2);
  const other = "another-key-0123456789";
  expect([await c.budget.take(other, "loc-3"), await c.budget.take(other, "loc-3")]).toEqual([0, 0]);
  expect(await c.budget.take(other, "loc-3")).toBeGreaterThan(0);
  c.budget.giveBack(other, "loc-3");
  expect(await c.budget.take(other, "loc-3")).toBe(0);
});
