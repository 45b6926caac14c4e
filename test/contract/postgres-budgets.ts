import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import { pgKeyBudgets } from "../../src/store/postgres/key-budgets.ts";
import type { postgresFactory } from "./postgres.ts";

type Postgres = ReturnType<typeof postgresFactory>;

const RATE = 10;
const BURST = 9;
const RUN_MS = 2000;

/** What only several servers on one database show of the keys' budgets: their takes together. */
export function postgresBudgetChecks(postgres: Postgres): void {
  test("postgres: four servers taking one key's budget together never take more than it holds, nor deadlock", async () => {
    const schema = "budgets_together";
    const first = await postgres.schema(schema);
    const pools: Pool[] = [first];
    try {
      await migratePostgres(first);
      // Four servers: four pools, each with two takers at once (a server's workers).
      for (let i = 1; i < 4; i++) pools.push(postgres.connect(schema));
      const started = performance.now();
      const counts = await Promise.all(pools.flatMap((pool) => [taker(pool), taker(pool)]));
      const elapsedS = (performance.now() - started) / 1000;
      const taken = counts.reduce((a, b) => a + b, 0);
      expect(taken).toBeLessThanOrEqual(BURST + RATE * elapsedS);
      // And the budget is spent, not starved by the contention: most of what it allows.
      expect(taken).toBeGreaterThanOrEqual(BURST + RATE * (RUN_MS / 1000) * 0.8);
    } finally {
      for (const pool of pools) await pool.end();
      await postgres.drop(schema);
    }
  });
}

/** Takes tokens of one key for RUN_MS, asking again soon after a refusal; how many it took. */
async function taker(pool: Pool): Promise<number> {
  const budgets = pgKeyBudgets(pool);
  const end = Date.now() + RUN_MS;
  let taken = 0;
  while (Date.now() < end) {
    const wait = await budgets.take("tag-busy", RATE, BURST, Date.now());
    if (wait === 0) taken++;
    else await sleep(Math.min(wait, 3 + Math.random() * 5));
  }
  return taken;
}
