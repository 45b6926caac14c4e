import type { KeyBudgets } from "../contract-budgets.ts";
import type { Queryable } from "./pool.ts";

/** The database's clock in ms: every server reads the same one, whatever its own says. */
const NOW = "(SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS now)";

/**
 * A key's token taken in one statement (../shared/SCALE_DESIGN.md, section 3), on the
 * database's clock: a new key's row is made full and gives its first token; a known one
 * is refilled to now and gives a token only when it holds one and is not paused, under
 * the row's lock, so servers taking together never take more than the bucket holds.
 * Without a token the same statement reads the wait. A clock read before another
 * server's write under the lock refills nothing (never backwards). One row per
 * statement: no two takers wait on each other's rows, so no deadlock.
 */
const TAKE = `
  WITH c AS ${NOW},
  took AS (
    INSERT INTO key_budgets AS b (tag, tokens, at_ms, paused_until)
    SELECT $1, $3::float8 - 1, c.now, 0 FROM c
    ON CONFLICT (tag) DO UPDATE SET
      tokens = least($3::float8, b.tokens + greatest(0, excluded.at_ms - b.at_ms) * $2::float8 / 1000) - 1,
      at_ms = greatest(b.at_ms, excluded.at_ms)
    WHERE b.paused_until <= excluded.at_ms
      AND least($3::float8, b.tokens + greatest(0, excluded.at_ms - b.at_ms) * $2::float8 / 1000) >= 1
    RETURNING 0::float8 AS wait
  )
  SELECT coalesce(
    (SELECT wait FROM took),
    (SELECT greatest(1, b.paused_until - c.now,
              ceil((1 - least($3::float8, b.tokens + greatest(0, c.now - b.at_ms) * $2::float8 / 1000)) * 1000 / $2::float8))
       FROM key_budgets b, c WHERE b.tag = $1),
    ceil(1000 / $2::float8)) AS wait`;

const PAUSE = `
  INSERT INTO key_budgets AS b (tag, tokens, at_ms, paused_until)
  SELECT $1, 0, c.now, c.now + $2::float8 FROM ${NOW} c
  ON CONFLICT (tag) DO UPDATE SET paused_until = greatest(b.paused_until, excluded.paused_until)`;

/** The keys' send budgets on PostgreSQL, shared by every server of the database (src/db/key-budgets.ts on SQLite). */
export function pgKeyBudgets(db: Queryable): KeyBudgets {
  return {
    shared: true,
    async take(tag, ratePerSecond, burst) {
      const row = (await db.query<{ wait: number }>(TAKE, [tag, ratePerSecond, burst])).rows[0];
      return row?.wait ?? Math.ceil(1000 / ratePerSecond);
    },
    async giveBack(tag, burst) {
      await db.query("UPDATE key_budgets SET tokens = least($2::float8, tokens + 1) WHERE tag = $1", [tag, burst]);
    },
    async pause(tag, forMs) {
      await db.query(PAUSE, [tag, forMs]);
    },
  };
}
