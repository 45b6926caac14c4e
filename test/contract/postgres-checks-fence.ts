import { expect, test } from "vitest";
import { createSealer } from "../../src/db/sealer.ts";
import { monthIn } from "../../src/db/usage-month.ts";
import { pgJobs } from "../../src/store/postgres/jobs.ts";
import { migratePostgres } from "../../src/store/postgres/pool.ts";
import { pgServers } from "../../src/store/postgres/servers.ts";
import { inSchema, type Postgres } from "./postgres-checks.ts";
import { TEST_KEY } from "./postgres.ts";
import { message } from "./store-cases.ts";

const T0 = 1_700_000_000_000;
const claim = (n: number) => ({ idempotencyKey: `idem-${n}`, apiKeyTag: "tag-1" });
const accepted = { outcome: "delivered", gatewayMessageId: "cast-1" } as const;

/** Servers presumed dead: their sends rescued, their late writes fenced off. */
export function fenceChecks(postgres: Postgres): void {
  test("postgres: a dead server's sends are rescued with their keys, and its late writes change nothing", () =>
    inSchema(postgres, "fence", async (pool) => {
      await migratePostgres(pool);
      const other = postgres.connect("fence");
      try {
        const sealer = createSealer(TEST_KEY);
        const month = monthIn("Asia/Manila");
        const [a, b] = [pgJobs(pool, sealer, month, "server-a"), pgJobs(other, sealer, month, "server-b")];
        for (const n of [1, 2]) await a.enqueue(message(n), T0);
        expect(await a.claimForSending(1, T0 + 1, claim(1))).toBe(true);
        expect(await b.claimForSending(2, T0 + 1, claim(2))).toBe(true);

        // Server A's heartbeat stopped: only its send is rescued, queued again under its key.
        const rescued = await b.recoverInterrupted(T0 + 60_000, { cast: T0 }, ["server-a"]);
        expect(rescued).toEqual({ resumed: 1, failed: [] });
        expect(await b.byId(1)).toMatchObject({ state: "queued", idempotencyKey: "idem-1", unclear: true });
        expect(await b.byId(2)).toMatchObject({ state: "sending" });

        // A was only slow: its late result and its late retry change nothing, before B claims the job and after.
        await a.recordResult(1, accepted, T0 + 60_001);
        await a.sendLater(1, T0 + 70_000, "late", T0 + 60_001);
        expect(await b.byId(1)).toMatchObject({ state: "queued", outcome: null, gatewayMessageId: null });
        expect(await b.claimForSending(1, T0 + 60_002, claim(99))).toBe(true);
        await a.recordResult(1, accepted, T0 + 60_003);
        expect(await b.byId(1)).toMatchObject({ state: "sending", idempotencyKey: "idem-1", attempts: 2 });
        // B's attempt got no answer and the job waits for its next: A's late result still changes nothing.
        await b.sendLater(1, T0 + 70_000, "timeout", T0 + 60_003);
        await a.recordResult(1, accepted, T0 + 60_004);
        expect(await b.byId(1)).toMatchObject({ state: "queued", outcome: null, gatewayMessageId: null });
        expect(await b.claimForSending(1, T0 + 70_000, claim(99))).toBe(true);

        // The server that claimed it stores its outcome; a refusal from the queue is stored by any server.
        await b.recordResult(1, { ...accepted, gatewayMessageId: "cast-2" }, T0 + 70_001);
        expect(await b.byId(1)).toMatchObject({ state: "reporting", gatewayMessageId: "cast-2" });
        await a.enqueue(message(3), T0);
        await a.recordResult(3, { outcome: "failed", errorCode: "invalid_phone", errorMessage: "not a number" }, T0 + 1, undefined, true);
        expect(await b.byId(3)).toMatchObject({ state: "reporting", errorCode: "invalid_phone" });
      } finally {
        await other.end();
      }
    }));

  test("postgres: a dead server's send past its key's window is failed unknown, never resent", () =>
    inSchema(postgres, "fence_old", async (pool) => {
      await migratePostgres(pool);
      const jobs = pgJobs(pool, createSealer(TEST_KEY), monthIn("Asia/Manila"), "server-a");
      await jobs.enqueue(message(1), T0);
      expect(await jobs.claimForSending(1, T0, claim(1))).toBe(true);
      const rescued = await jobs.recoverInterrupted(T0 + 86_400_000, { cast: T0 + 1 }, ["server-a", "server-c"]);
      expect(rescued).toEqual({ resumed: 0, failed: [{ messageId: "msg-1", locationId: "loc-1" }] });
      expect(await jobs.byId(1)).toMatchObject({ state: "reporting", errorCode: "delivery_unknown" });
      expect(await jobs.recoverInterrupted(T0 + 86_400_001, { cast: T0 }, ["server-b"])).toEqual({ resumed: 0, failed: [] });
    }));

  test("postgres: a server with no row that left a send mid-way is an orphan, its sends anybody's to rescue", () =>
    inSchema(postgres, "orphans", async (pool) => {
      await migratePostgres(pool);
      const servers = pgServers(pool);
      const jobs = pgJobs(pool, createSealer(TEST_KEY), monthIn("Asia/Manila"), "server-a");
      for (const n of [1, 2]) await jobs.enqueue(message(n), T0);
      await servers.beat("server-a", "host-a");
      expect(await jobs.claimForSending(1, T0, claim(1))).toBe(true);
      expect(await servers.orphans()).toEqual([]);
      await servers.gone("server-a"); // a clean stop that could not count the send it left
      expect(await servers.orphans()).toEqual(["server-a"]);
      expect(await jobs.recoverInterrupted(T0 + 1, { cast: T0 }, await servers.orphans())).toEqual({ resumed: 1, failed: [] });
      expect(await servers.orphans()).toEqual([]);
    }));
}
