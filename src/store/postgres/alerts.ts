import type { AlertRow } from "../../db/alerts.ts";
import { ms } from "../../db/ms.ts";
import type { AlertStore } from "../contract-usage.ts";
import type { AlertKind } from "../types.ts";
import { transaction, type Pool, type Queryable } from "./pool.ts";

const OPEN_CONDITION = `
  INSERT INTO alert_conditions (condition, title, started_at, repeated_at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (condition) DO UPDATE SET title = excluded.title, started_at = excluded.started_at, repeated_at = excluded.repeated_at`;

async function insert(db: Queryable, condition: string, kind: AlertKind, text: string, at: number): Promise<number> {
  const found = await db.query<{ id: number }>(
    "INSERT INTO alerts (condition, kind, text, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
    [condition, kind, text, ms(at)],
  );
  return found.rows[0]!.id;
}

/**
 * Alerts and the conditions they were raised for, on PostgreSQL (src/db/alerts.ts on
 * SQLite): a condition's change and its alert in one transaction.
 */
export function pgAlerts(pool: Pool): AlertStore {
  return {
    async open() {
      const rows = (await pool.query("SELECT * FROM alert_conditions ORDER BY started_at")).rows;
      return rows.map((r) => ({ condition: r.condition, title: r.title, startedAt: r.started_at, repeatedAt: r.repeated_at }));
    },
    start: (condition, title, text, at, since = at) =>
      transaction(pool, async (client) => {
        await client.query(OPEN_CONDITION, [condition, title, ms(since), ms(at)]);
        await insert(client, condition, "started", text, at);
      }),
    async adopt(condition, title, startedAt) {
      await pool.query(OPEN_CONDITION, [condition, title, ms(startedAt), ms(startedAt)]);
    },
    repeat: (condition, text, at) =>
      transaction(pool, async (client) => {
        await client.query("UPDATE alert_conditions SET repeated_at = $1 WHERE condition = $2", [ms(at), condition]);
        await insert(client, condition, "repeat", text, at);
      }),
    end: (condition, text, at) =>
      transaction(pool, async (client) => {
        await client.query("DELETE FROM alert_conditions WHERE condition = $1", [condition]);
        await insert(client, condition, "ended", text, at);
      }),
    health: () => health(pool),
    ...queue(pool),
  };
}

/** The alerts as the alert loop takes them: the oldest waiting first, until delivered. */
function queue(pool: Pool): Omit<AlertStore, "open" | "start" | "adopt" | "repeat" | "end" | "health"> {
  const delivered = "UPDATE alerts SET delivered_at = $2, attempts = attempts + 1, last_attempt_at = $2 WHERE id = $1";
  return {
    async waiting(condition) {
      return ((await pool.query("SELECT 1 FROM alerts WHERE delivered_at IS NULL AND condition = $1 LIMIT 1", [condition])).rowCount ?? 0) > 0;
    },
    test: (text, at, sent) =>
      transaction(pool, async (client) => {
        const id = await insert(client, "test", "test", text, at);
        if (sent) await client.query(delivered, [id, ms(at)]);
        return id;
      }),
    async next() {
      const r = (await pool.query<AlertRow>("SELECT * FROM alerts WHERE delivered_at IS NULL ORDER BY id LIMIT 1")).rows[0];
      return r && { id: r.id, condition: r.condition, kind: r.kind, text: r.text, createdAt: r.created_at, attempts: r.attempts, nextAttemptAt: r.next_attempt_at };
    },
    async delivered(id, at) {
      await pool.query(delivered, [id, ms(at)]);
    },
    async failed(id, error, at, retryAt) {
      await pool.query("UPDATE alerts SET attempts = attempts + 1, last_error = $2, last_attempt_at = $3, next_attempt_at = $4 WHERE id = $1", [
        id, error, ms(at), ms(retryAt),
      ]);
    },
    async prune(before) {
      return (await pool.query("DELETE FROM alerts WHERE delivered_at IS NOT NULL AND delivered_at < $1", [ms(before)])).rowCount ?? 0;
    },
  };
}

async function health(db: Queryable) {
  const h = (await db.query<{ waiting: number; delivered_at: number | null; error: string | null; error_at: number | null }>(`
    SELECT (SELECT count(*) FROM alerts WHERE delivered_at IS NULL) AS waiting,
      (SELECT max(delivered_at) FROM alerts) AS delivered_at,
      (SELECT last_error FROM alerts WHERE last_error IS NOT NULL ORDER BY last_attempt_at DESC LIMIT 1) AS error,
      (SELECT max(last_attempt_at) FROM alerts WHERE last_error IS NOT NULL) AS error_at`)).rows[0]!;
  const failedLast = h.error_at != null && (h.delivered_at == null || h.error_at > h.delivered_at);
  return {
    waiting: h.waiting,
    lastDeliveredAt: h.delivered_at,
    lastError: failedLast ? h.error : null,
    lastErrorAt: failedLast ? h.error_at : null,
  };
}
