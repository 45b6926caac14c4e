import type { Db } from "./index.ts";

interface Row {
  tokens: number;
  at_ms: number;
  paused_until: number;
}

/**
 * The `key_budgets` table on SQLite (src/store/contract-budgets.ts): one server writes it,
 * so the clock is the caller's. Each method runs inside the group commit's transaction,
 * which makes its statements one step. `shared` is false: one server keeps the budgets in memory.
 */
export function createKeyBudgets(db: Db) {
  // A new key starts full; a known one is refilled to now, and gives a token only when it has one and is not paused.
  const take = db.prepare<[{ tag: string; rate: number; burst: number; now: number }], { tokens: number }>(`
    INSERT INTO key_budgets (tag, tokens, at_ms, paused_until) VALUES (@tag, @burst - 1, @now, 0)
    ON CONFLICT (tag) DO UPDATE SET
      tokens = min(@burst, tokens + max(0, @now - at_ms) * @rate / 1000) - 1, at_ms = max(at_ms, @now)
    WHERE paused_until <= @now AND min(@burst, tokens + max(0, @now - at_ms) * @rate / 1000) >= 1
    RETURNING tokens`);
  const read = db.prepare<[string], Row>("SELECT tokens, at_ms, paused_until FROM key_budgets WHERE tag = ?");
  const giveBack = db.prepare<[{ tag: string; burst: number }]>("UPDATE key_budgets SET tokens = min(@burst, tokens + 1) WHERE tag = @tag");
  const pause = db.prepare<[{ tag: string; until: number; now: number }]>(`
    INSERT INTO key_budgets (tag, tokens, at_ms, paused_until) VALUES (@tag, 0, @now, @until)
    ON CONFLICT (tag) DO UPDATE SET paused_until = max(paused_until, excluded.paused_until)`);
  return {
    take(tag: string, ratePerSecond: number, burst: number, now: number): number {
      if (take.get({ tag, rate: ratePerSecond, burst, now })) return 0;
      const row = read.get(tag);
      return row ? waitOf(row, ratePerSecond, burst, now) : Math.ceil(1000 / ratePerSecond);
    },
    giveBack(tag: string, burst: number): void {
      giveBack.run({ tag, burst });
    },
    pause(tag: string, forMs: number, now: number): void {
      pause.run({ tag, until: now + forMs, now });
    },
  };
}

/** The ms until the bucket `row` holds a token and is not paused. */
function waitOf(row: Row, rate: number, burst: number, now: number): number {
  const tokens = Math.min(burst, row.tokens + (Math.max(0, now - row.at_ms) * rate) / 1000);
  return Math.max(1, row.paused_until - now, Math.ceil(((1 - tokens) * 1000) / rate));
}
