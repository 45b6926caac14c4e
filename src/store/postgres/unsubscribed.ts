import { storedList } from "../../db/unsubscribed.ts";
import type { UnsubscribedStore } from "../contract-servers.ts";
import type { Queryable } from "./pool.ts";
import { NOW_MS } from "./servers.ts";

/** Cast's unsubscribed lists on PostgreSQL (src/db/unsubscribed.ts on SQLite): read times on the database's clock. */
export function pgUnsubscribed(db: Queryable): UnsubscribedStore {
  return {
    async get(tag) {
      const found = await db.query<{ entries: string | null; age_ms: number }>(
        `SELECT entries, ${NOW_MS} - read_at AS age_ms FROM unsubscribed_lists WHERE tag = $1`, [tag]);
      const row = found.rows[0];
      return row && storedList(row.entries, row.age_ms);
    },
    async put(tag, entries) {
      await db.query(`
        INSERT INTO unsubscribed_lists (tag, entries, read_at) VALUES ($1, $2, ${NOW_MS})
        ON CONFLICT (tag) DO UPDATE SET entries = excluded.entries, read_at = excluded.read_at`, [tag, entries && JSON.stringify(entries)]);
    },
    async prune(olderThanMs) {
      return (await db.query(`DELETE FROM unsubscribed_lists WHERE read_at < ${NOW_MS} - $1::bigint`, [olderThanMs])).rowCount ?? 0;
    },
  };
}
