import { expect, test } from "vitest";
import { pgInbound } from "../../src/store/postgres/inbound.ts";
import { migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { inSchema, type Postgres } from "./postgres-checks.ts";
import { reply } from "./store-cases.ts";

const T0 = 1_700_000_000_000;
const ROUNDS = 20;

/** Runs `fn` with two pools on one fresh schema: two servers sharing one database. */
function twoServers(postgres: Postgres, name: string, fn: (one: Pool, two: Pool) => Promise<void>): Promise<void> {
  return inSchema(postgres, name, async (one) => {
    await migratePostgres(one);
    const two = postgres.connect(name);
    try {
      await fn(one, two);
    } finally {
      await two.end();
    }
  });
}

/** What two servers on one database do to the replies, and what the contract's cases cannot reach on PostgreSQL. */
export function inboundChecks(postgres: Postgres): void {
  test("postgres: two servers taking one reply to post it: exactly one takes it", () =>
    twoServers(postgres, "inbound_posting", async (one, two) => {
      const [a, b] = [pgInbound(one), pgInbound(two)];
      for (let n = 1; n <= ROUNDS; n++) await a.receive(reply(n, { phone: `+6391700000${n}` }), T0);
      const ids = await a.due(T0, ROUNDS);
      expect(ids).toHaveLength(ROUNDS);
      const taken = await Promise.all(ids.map((id) => Promise.all([a.markPosting(id, T0 + 1), b.markPosting(id, T0 + 1)])));
      expect(taken.map((pair) => pair.filter(Boolean).length)).toEqual(ids.map(() => 1));
    }));

  test("postgres: two servers receiving one reply at once store it once, counted once; both learn its id", () =>
    twoServers(postgres, "inbound_receive", async (one, two) => {
      const [a, b] = [pgInbound(one), pgInbound(two)];
      const answers = await Promise.all(
        Array.from({ length: ROUNDS }, (_, i) => Promise.all([a.receive(reply(i), T0), b.receive(reply(i + 100, { dedupeKey: `key-${i}` }), T0)])),
      );
      for (const [i, pair] of answers.entries()) {
        const stored = await a.idOfKey(`key-${i}`);
        expect([`in-${i}`, `in-${i + 100}`]).toContain(stored);
        expect(pair.filter((answer) => answer === undefined)).toHaveLength(1);
        expect(pair.filter((answer) => answer !== undefined)).toEqual([stored]);
      }
      expect((await one.query("SELECT count(*) AS n FROM inbound")).rows).toEqual([{ n: ROUNDS }]);
      expect((await one.query("SELECT sum(replies) AS n FROM usage")).rows).toEqual([{ n: ROUNDS }]);
    }));

  // The job store on PostgreSQL is not in this branch: the jobs are written as it writes them.
  test("postgres: the last message to a sender is read from job rows as the job store writes them", () =>
    inSchema(postgres, "inbound_last_sent", async (pool) => {
      await migratePostgres(pool);
      const job = (n: number, location: string, phone: string, at: number, tag: string | null) =>
        pool.query(`INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at, api_key_tag)
          VALUES ($1, $2, $3, $4, $4, $4, $5)`, [`msg-${n}`, location, JSON.stringify({ messageId: `msg-${n}`, phone }), at, tag]);
      for (const location of ["loc-1", "loc-2"]) {
        await pool.query("INSERT INTO tokens (location_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ($1, '', '', 0, 0, 0)", [location]);
      }
      await job(1, "loc-1", "+639171234567", T0, "android:dev-1");
      await job(2, "loc-2", "09171234567", T0 + 1, null);
      await job(3, "loc-9", "+639171234567", T0 + 2, null);
      const replies = pgInbound(pool);
      expect(await replies.lastSentTo("+639171234567", "09171234567")).toBe("loc-2");
      expect(await replies.lastSentTo("+639171234567", "+639171234567")).toBe("loc-1");
      expect(await replies.lastSentTo("+639170000000", "09170000000")).toBeUndefined();
      expect(await replies.lastSentTo("+639171234567", "09171234567", "android:dev-1")).toBe("loc-1");
      expect(await replies.lastSentTo("+639171234567", "09171234567", "android:dev-2")).toBeUndefined();
      await pool.query("UPDATE tokens SET uninstalled_at = $1 WHERE location_id = 'loc-2'", [T0 + 4]);
      expect(await replies.lastSentTo("+639171234567", "09171234567")).toBe("loc-1");
    }));
}
