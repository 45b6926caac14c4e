import { expect, test } from "vitest";
import { migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { pgAppSessions, pgLeases } from "../../src/store/postgres/servers.ts";
import { openPostgresStore } from "../../src/store/postgres/store.ts";
import { TEST_KEY, type postgresFactory } from "./postgres.ts";

type Postgres = ReturnType<typeof postgresFactory>;

/** Runs `fn` with two pools on one fresh schema (two servers on one database), dropped after. */
async function twoServers(postgres: Postgres, name: string, fn: (first: Pool, second: Pool) => Promise<void>): Promise<void> {
  const first = await postgres.schema(name);
  const second = postgres.connect(name);
  try {
    await migratePostgres(first);
    await fn(first, second);
  } finally {
    await second.end();
    await first.end();
    await postgres.drop(name);
  }
}

/** Leases and sessions written by several servers at once, each with its own pool (its own connections). */
export function postgresLeaseChecks(postgres: Postgres): void {
  test("postgres: servers taking one lease at once get exactly one holder, and a lapsed one a new term", () =>
    twoServers(postgres, "race", async (first, second) => {
      const servers = [pgLeases(first), pgLeases(second)];
      for (let round = 0; round < 20; round++) {
        const name = `lease-${round}`;
        const taken = await Promise.all([0, 1, 2, 3].map((n) => servers[n % 2]!.take(name, `s-${n}`, 60_000)));
        expect(taken.filter((epoch) => epoch !== undefined)).toEqual([1]);
      }
      expect(await servers[0]!.take("leader", "s-0", 20)).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const after = await Promise.all([1, 2, 3].map((n) => servers[n % 2]!.take("leader", `s-${n}`, 60_000)));
      expect(after.filter((epoch) => epoch !== undefined)).toEqual([2]);
      const [leader] = await servers[0]!.list().then((all) => all.filter((l) => l.name === "leader"));
      expect(leader).toMatchObject({ epoch: 2, holder: `s-${after.findIndex((e) => e !== undefined) + 1}` });
    }));

  test("postgres: one user signing in on two servers at once keeps one session", () =>
    twoServers(postgres, "sessions_race", async (first, second) => {
      const servers = [pgAppSessions(first), pgAppSessions(second)];
      const session = { locationId: "loc-1", userId: "u-1", role: "admin", expiresAt: 2000 };
      const opened = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => servers[n % 2]!.open(`hash-${n}`, session, 1000, 10)));
      expect(opened).toEqual([true, true, true, true, true, true]);
      expect((await first.query("SELECT count(*)::int AS n FROM app_sessions")).rows).toEqual([{ n: 1 }]);
    }));

  test("postgres: a token's refresh lease runs on the database's clock: a server whose clock is ahead cannot take one held", () =>
    twoServers(postgres, "token_lease_clock", async (first, second) => {
      const [mine, theirs] = [openPostgresStore(first, createSealer(TEST_KEY)), openPostgresStore(second, createSealer(TEST_KEY))];
      const now = Date.now();
      await mine.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "at", refreshToken: "rt", expiresAt: now + 60_000 }, now);
      const { serial } = (await mine.tokens.get("loc-1"))!;
      expect(await mine.tokens.tryLease("loc-1", serial, now, now + 60_000)).toBe(true);
      // Another server's clock runs 10 minutes ahead: by it the lease lapsed long ago; by the database's, not.
      const ahead = Date.now() + 600_000;
      expect(await theirs.tokens.tryLease("loc-1", serial, ahead, ahead + 60_000)).toBe(false);
      // A server whose clock is behind still takes a lease that lapsed by the database's clock.
      await mine.tokens.releaseLease("loc-1", serial);
      expect(await mine.tokens.tryLease("loc-1", serial, Date.now(), Date.now() + 20)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const behind = Date.now() - 600_000;
      expect(await theirs.tokens.tryLease("loc-1", serial, behind, behind + 60_000)).toBe(true);
    }));
}
