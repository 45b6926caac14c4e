import { expect, test } from "vitest";
import { migratePostgres } from "../../src/store/postgres/pool.ts";
import { pgLeases } from "../../src/store/postgres/servers.ts";
import type { postgresFactory } from "./postgres.ts";

type Postgres = ReturnType<typeof postgresFactory>;

/** Leases taken by several servers at once, each with its own pool (its own connections). */
export function postgresLeaseChecks(postgres: Postgres): void {
  test("postgres: servers taking one lease at once get exactly one holder, and a lapsed one a new term", async () => {
    const first = await postgres.schema("race");
    const second = postgres.pool("race");
    try {
      await migratePostgres(first);
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
    } finally {
      await second.end();
      await first.end();
      await postgres.drop("race");
    }
  });
}
