import { expect, test } from "vitest";
import { migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { pgAppSessions, pgLeases } from "../../src/store/postgres/servers.ts";
import type { postgresFactory } from "./postgres.ts";

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
}
