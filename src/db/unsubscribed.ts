import type { StoredUnsubscribed, UnsubscribedNumber } from "../store/contract-servers.ts";
import type { Db } from "./index.ts";
import { ms } from "./ms.ts";
import type { Clock } from "./servers.ts";

interface ListRow {
  entries: string | null;
  read_at: number;
}

/** The `unsubscribed_lists` table on SQLite (src/store/postgres/unsubscribed.ts on PostgreSQL), on the machine's clock. */
export function createUnsubscribedStore(db: Db, clock: Clock) {
  const get = db.prepare<[string], ListRow>("SELECT entries, read_at FROM unsubscribed_lists WHERE tag = ?");
  const put = db.prepare<[string, string | null, number]>(`
    INSERT INTO unsubscribed_lists (tag, entries, read_at) VALUES (?, ?, ?)
    ON CONFLICT (tag) DO UPDATE SET entries = excluded.entries, read_at = excluded.read_at`);
  const prune = db.prepare<[number]>("DELETE FROM unsubscribed_lists WHERE read_at < ?");
  return {
    get(tag: string): StoredUnsubscribed | undefined {
      const row = get.get(tag);
      return row && storedList(row.entries, clock() - row.read_at);
    },
    put(tag: string, entries: UnsubscribedNumber[] | null): void {
      put.run(tag, entries && JSON.stringify(entries), ms(clock()));
    },
    prune(olderThanMs: number): number {
      return prune.run(ms(clock() - olderThanMs)).changes;
    },
  };
}

/** A stored list as the contract gives it; a column that is not a list reads as a failed read. */
export function storedList(entries: string | null, ageMs: number): StoredUnsubscribed {
  let list: unknown = null;
  try {
    list = entries === null ? null : JSON.parse(entries);
  } catch {
    list = null;
  }
  return { entries: Array.isArray(list) ? (list as UnsubscribedNumber[]) : null, ageMs };
}
