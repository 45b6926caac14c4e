import type { AppSession, LeaseRecord, ServerRecord } from "../store/contract-servers.ts";
import type { Db } from "./index.ts";
import { ms } from "./ms.ts";

interface ServerRow {
  id: string;
  address: string;
  started_at: number;
  heartbeat_at: number;
}

interface LeaseRow {
  name: string;
  holder: string;
  until_at: number;
  epoch: number;
}

interface SessionRow {
  location_id: string;
  user_id: string;
  role: string;
  expires_at: number;
}

/** SQLite's clock for servers and leases: the machine's (one file is one machine's). */
export type Clock = () => number;

/** The `servers` table on SQLite (src/store/postgres/servers.ts on PostgreSQL): heartbeats on the machine's clock. */
export function createServerStore(db: Db, clock: Clock) {
  const beat = db.prepare<[string, string, number, number]>(`
    INSERT INTO servers (id, address, started_at, heartbeat_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET address = excluded.address, heartbeat_at = excluded.heartbeat_at`);
  const all = db.prepare<[], ServerRow>("SELECT * FROM servers ORDER BY started_at, id");
  const remove = db.prepare<[string]>("DELETE FROM servers WHERE id = ?");
  const others = db.prepare<[string, number], ServerRow>("SELECT * FROM servers WHERE id <> ? AND heartbeat_at >= ? ORDER BY started_at, id");
  const orphans = db.prepare<[], string>("SELECT id FROM (SELECT DISTINCT run_by AS id FROM jobs WHERE state = 'sending' AND run_by IS NOT NULL AND run_by NOT IN (SELECT id FROM servers)) AS o ORDER BY id").pluck();
  const record = (r: ServerRow, now: number): ServerRecord => ({
    id: r.id, address: r.address, startedAt: r.started_at, heartbeatAt: r.heartbeat_at, ageMs: now - r.heartbeat_at,
  });
  return {
    beat(id: string, address: string): void {
      const now = ms(clock());
      beat.run(id, address, now, now);
    },
    list(): ServerRecord[] {
      const now = clock();
      return all.all().map((r) => record(r, now));
    },
    gone(id: string): void {
      remove.run(id);
    },
    others(id: string, freshMs: number): ServerRecord[] {
      const now = clock();
      return others.all(id, now - freshMs).map((r) => record(r, now));
    },
    orphans(): string[] {
      return orphans.all();
    },
  };
}

/**
 * The `leases` table on SQLite: a take is one statement that writes only when the lease
 * is free, lapsed or the holder's own, so two takers never both hold it.
 */
export function createLeaseStore(db: Db, clock: Clock) {
  // A lapsed lease starts a new term (epoch + 1).
  const take = db.prepare<[{ name: string; holder: string; now: number; until: number }], number>(`
    INSERT INTO leases (name, holder, until_at, epoch) VALUES (@name, @holder, @until, 1)
    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_at = excluded.until_at,
      epoch = CASE WHEN leases.until_at <= @now THEN leases.epoch + 1 ELSE leases.epoch END
    WHERE leases.holder = excluded.holder OR leases.until_at <= @now
    RETURNING epoch`).pluck();
  const release = db.prepare<[string, string]>("UPDATE leases SET until_at = 0 WHERE name = ? AND holder = ?");
  const drop = db.prepare<[string, string]>("DELETE FROM leases WHERE name = ? AND holder = ?");
  const all = db.prepare<[], LeaseRow>("SELECT * FROM leases ORDER BY name");
  return {
    take(name: string, holder: string, ttlMs: number): number | undefined {
      const now = ms(clock());
      return take.get({ name, holder, now, until: now + ms(ttlMs) });
    },
    release(name: string, holder: string): void {
      release.run(name, holder);
    },
    drop(name: string, holder: string): void {
      drop.run(name, holder);
    },
    list(): LeaseRecord[] {
      const now = clock();
      return all.all().map((r) => ({ name: r.name, holder: r.holder, untilAt: r.until_at, epoch: r.epoch, leftMs: r.until_at - now }));
    },
  };
}

/** The settings page's sessions on SQLite (`app_sessions`), by their token's SHA-256. */
export function createAppSessionStore(db: Db) {
  // Sessions lasting at `now`, the user's own at the location left out: it is replaced.
  const others = db.prepare<[number, string, string], number>(`
    SELECT count(*) FROM app_sessions WHERE expires_at > ? AND NOT (location_id = ? AND user_id = ?)`).pluck();
  const upsert = db.prepare<[string, string, string, string, number]>(`
    INSERT INTO app_sessions (token_hash, location_id, user_id, role, expires_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (location_id, user_id) DO UPDATE SET token_hash = excluded.token_hash, role = excluded.role,
      expires_at = excluded.expires_at`);
  const get = db.prepare<[string, number], SessionRow>("SELECT * FROM app_sessions WHERE token_hash = ? AND expires_at > ?");
  const drop = db.prepare<[string]>("DELETE FROM app_sessions WHERE token_hash = ?");
  const prune = db.prepare<[number]>("DELETE FROM app_sessions WHERE expires_at <= ?");
  return {
    open(tokenHash: string, session: AppSession, now: number, max: number): boolean {
      if ((others.get(ms(now), session.locationId, session.userId) ?? 0) >= max) return false;
      upsert.run(tokenHash, session.locationId, session.userId, session.role, ms(session.expiresAt));
      return true;
    },
    get(tokenHash: string, now: number): AppSession | undefined {
      const row = get.get(tokenHash, ms(now));
      return row && { locationId: row.location_id, userId: row.user_id, role: row.role, expiresAt: row.expires_at };
    },
    drop(tokenHash: string): void {
      drop.run(tokenHash);
    },
    prune(now: number): number {
      return prune.run(ms(now)).changes;
    },
  };
}
