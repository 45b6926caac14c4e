import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { createSealer } from "../../src/db/sealer.ts";
import type { Store } from "../../src/store/contract.ts";
import { openStore } from "../../src/store/open.ts";
import { migratePostgres, transaction } from "../../src/store/postgres/pool.ts";
import { openPostgresStore } from "../../src/store/postgres/store.ts";
import { pgUsageCount } from "../../src/store/postgres/usage-count.ts";
import { inSchema, type Postgres } from "./postgres-checks.ts";
import { TEST_KEY } from "./postgres.ts";
import { message } from "./store-cases.ts";

const T0 = 1_700_000_000_000;

/** What the job store writes, read under the contract: every table it touches, in a stable order; the sealed key left out. */
const TABLES = [
  "SELECT * FROM jobs ORDER BY id",
  "SELECT * FROM job_events ORDER BY id",
  "SELECT * FROM seen_messages ORDER BY message_id",
  "SELECT * FROM usage ORDER BY location_id, month, gateway",
  "SELECT * FROM usage_reserved ORDER BY location_id, month",
  "SELECT key_tag, key_masked FROM gateway_keys ORDER BY key_tag",
];

/** The job store's PostgreSQL checks: several servers on one database, and the same rows as SQLite's. */
export function jobChecks(postgres: Postgres): void {
  test("postgres: servers adding test messages at once never pass the limit together", () =>
    inSchema(postgres, "limited", async (pool) => {
      await migratePostgres(pool);
      const other = postgres.connect("limited");
      try {
        const servers = [pool, other].map((p) => openPostgresStore(p, createSealer(TEST_KEY)));
        const limit = { count: 3, windowMs: 3_600_000, prefix: "msg-" };
        const waits = await Promise.all(Array.from({ length: 12 }, (_, i) => servers[i % 2]!.jobs.enqueueLimited(message(i + 1), T0, limit)));
        expect(waits.filter((wait) => wait === 0)).toHaveLength(3);
        expect(await servers[0]!.jobs.counts()).toEqual({ queued: 3 });
      } finally {
        await other.end();
      }
    }));

  test("postgres: servers claiming a location's sends at once never pass its monthly cap together", () =>
    inSchema(postgres, "capped", async (pool) => {
      await migratePostgres(pool);
      const other = postgres.connect("capped");
      try {
        const servers = [pool, other].map((p) => openPostgresStore(p, createSealer(TEST_KEY)));
        await servers[0]!.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
        await servers[0]!.usage.setCap("loc-1", 5, T0);
        for (let n = 1; n <= 12; n++) await servers[0]!.jobs.enqueue(message(n), T0);
        const claims = Array.from({ length: 12 }, (_, i) =>
          servers[i % 2]!.jobs.claimForSending(i + 1, T0, { idempotencyKey: `idem-${i}`, apiKeyTag: "tag-1", parts: 1 }),
        );
        expect((await Promise.all(claims)).filter(Boolean)).toHaveLength(5);
        expect(await servers[0]!.jobs.counts()).toEqual({ sending: 5, reporting: 7 });
        expect(await servers[0]!.usage.used("loc-1", "2023-11")).toBe(5);
      } finally {
        await other.end();
      }
    }));

  test("postgres: a settled job's count is taken back once, and a reply counted", () =>
    inSchema(postgres, "unsettled", async (pool) => {
      await migratePostgres(pool);
      const store = openPostgresStore(pool, createSealer(TEST_KEY));
      await store.jobs.enqueue(message(1), T0);
      await store.jobs.claimForSending(1, T0, { idempotencyKey: "idem-1", apiKeyTag: "tag-1", parts: 2 });
      await store.jobs.recordResult(1, { outcome: "delivered", gatewayMessageId: "gw-1", parts: 2 }, T0 + 1);
      await store.jobs.reported(1, "delivered", T0 + 2);
      const counted = "SELECT gateway, messages, parts, delivered, replies FROM usage ORDER BY gateway";
      expect((await pool.query(counted)).rows).toEqual([{ gateway: "cast", messages: 1, parts: 2, delivered: 1, replies: 0 }]);
      await transaction(pool, async (client) => {
        await pgUsageCount.unsettled(client, 1);
        await pgUsageCount.reply(client, "loc-1", "2023-11", "api");
      });
      expect((await pool.query(counted)).rows).toEqual([
        { gateway: "api", messages: 0, parts: 0, delivered: 0, replies: 1 },
        { gateway: "cast", messages: 0, parts: 0, delivered: 0, replies: 0 },
      ]);
      expect((await pool.query("SELECT parts FROM usage_reserved")).rows).toEqual([{ parts: 0 }]);
    }));

  test("postgres: a job's whole life writes the same rows and timeline as on SQLite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bridge-jobs-"));
    const db = openDb(join(dir, "bridge.db"));
    try {
      await lifeOfJobs(openStore({ encryptionKey: TEST_KEY }, db));
      const sqlite = TABLES.map((sql) => db.prepare(sql).all());
      await inSchema(postgres, "same", async (pool) => {
        await migratePostgres(pool);
        await lifeOfJobs(openPostgresStore(pool, createSealer(TEST_KEY)));
        const found = [];
        for (const sql of TABLES) found.push((await pool.query(sql)).rows);
        expect(found).toEqual(sqlite);
      });
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** Every step of the job store, in an order that takes each branch: the same on any store. */
async function lifeOfJobs(store: Pick<Store, "jobs" | "tokens" | "usage">): Promise<void> {
  const { jobs } = store;
  await store.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: T0 }, T0);
  await store.usage.setCap("loc-1", 4, T0);
  for (let n = 1; n <= 8; n++) await jobs.enqueue(message(n, n % 2 ? "loc-1" : "loc-2"), T0 + n, n === 8);
  await jobs.enqueueLimited(message(9), T0 + 9, { count: 5, windowMs: 60_000, prefix: "msg-" });
  await jobs.enqueue(message(1), T0 + 10);
  for (const reason of ["sealed", "sealed", "other", "sealed"]) await jobs.noteError(2, reason, T0 + 11);
  const key = { masked: "ke…y1", apiKey: "key-1" };
  await jobs.claimForSending(1, T0 + 12, { idempotencyKey: "idem-1", apiKeyTag: "tag-1", senderId: "BRIDGE", parts: 2 }, key);
  await jobs.sendLater(1, T0 + 13, "unreachable", T0 + 12.5, { unclear: true });
  await jobs.claimForSending(1, T0 + 13, { idempotencyKey: "idem-1b", apiKeyTag: "tag-1", parts: 2 }, key);
  await jobs.sendLater(1, T0 + 14, "unreachable", T0 + 13);
  await jobs.claimForSending(1, T0 + 14, { idempotencyKey: "idem-1", apiKeyTag: "tag-1", parts: 2 });
  await jobs.recordResult(1, { outcome: "delivered", gatewayMessageId: "gw-1", parts: 2 }, T0 + 15, { at: T0 + 20, deadline: T0 + 90 });
  await jobs.receiptLater(1, T0 + 30, T0 + 20);
  await jobs.receiptsDue([1, 3], T0 + 21);
  await jobs.recordReceipt(1, { outcome: "delivered", receipt: "DELIVERED" }, T0 + 22);
  for (const [at, reason] of [[23, "refused"], [24, "refused"], [25, "down"]] as const) await jobs.retryLater(1, T0 + at + 5, reason, T0 + at);
  await jobs.reported(1, "delivered", T0 + 26);
  await jobs.claimForSending(3, T0 + 27, { idempotencyKey: "idem-3", apiKeyTag: "tag-1", parts: 3 }); // past the cap of 4
  await jobs.claimForSending(4, T0 + 28, { idempotencyKey: "idem-4", apiKeyTag: "tag-p", gateway: "android:dev-1" }, key);
  await jobs.recordResult(4, { outcome: "delivered", gatewayMessageId: "gw-4" }, T0 + 29, { at: T0 + 40, deadline: T0 + 99 });
  await jobs.sentByPhone(4, T0 + 30, "an event");
  await jobs.sentByPhone(4, T0 + 31, "a read");
  await jobs.sendAgain(4, T0 + 32, "the phone's limit", T0 + 31);
  await jobs.claimForSending(4, T0 + 32, { idempotencyKey: "idem-4b", apiKeyTag: "tag-p", fresh: true, gateway: "android:dev-1" });
  await jobs.recordResult(4, { outcome: "failed", errorCode: "gateway_unknown", errorMessage: "no answer" }, T0 + 33);
  await jobs.giveUp(4, T0 + 34, "HighLevel refused");
  await jobs.markHeld(6, "key refused", T0 + 60_000, T0 + 35);
  await jobs.markHeld(6, "key refused again", T0 + 60_000, T0 + 36);
  await jobs.wakeHeld(T0 + 37);
  await jobs.claimForSending(5, T0 + 38, { idempotencyKey: "idem-5", apiKeyTag: "tag-1" });
  await jobs.claimForSending(7, T0 + 10, { idempotencyKey: "idem-7", apiKeyTag: "tag-1" });
  await jobs.claimForSending(8, T0 + 38, { idempotencyKey: "idem-8", apiKeyTag: "tag-p", gateway: "android:dev-2" });
  await jobs.claimForSending(2, T0 + 38);
  await jobs.recoverInterrupted(T0 + 40, { cast: T0 + 20, android: T0 + 20 });
  await jobs.reported(3, "failed", T0 + 41);
  await jobs.prune(T0 + 35, 5);
}
