import { ms } from "../../db/ms.ts";
import type { AppSessionStore, LeaseStore, ServerRecord, ServerStore } from "../contract-servers.ts";
import type { Queryable } from "./pool.ts";

/** The database's clock in ms: every server reads the same one, so no two machines' clocks are compared. */
export const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

interface ServerRow {
  id: string;
  address: string;
  started_at: number;
  heartbeat_at: number;
  age_ms: number;
}

const server = (r: ServerRow): ServerRecord => ({ id: r.id, address: r.address, startedAt: r.started_at, heartbeatAt: r.heartbeat_at, ageMs: r.age_ms });

/** The servers' heartbeats on PostgreSQL (src/db/servers.ts on SQLite), on the database's clock. */
export function pgServers(db: Queryable): ServerStore {
  return {
    async beat(id, address) {
      await db.query(`
        INSERT INTO servers (id, address, started_at, heartbeat_at) VALUES ($1, $2, ${NOW_MS}, ${NOW_MS})
        ON CONFLICT (id) DO UPDATE SET address = excluded.address, heartbeat_at = excluded.heartbeat_at`, [id, address]);
    },
    async list() {
      return (await db.query<ServerRow>(`SELECT *, ${NOW_MS} - heartbeat_at AS age_ms FROM servers ORDER BY started_at, id COLLATE "C"`)).rows.map(server);
    },
    async gone(id) {
      await db.query("DELETE FROM servers WHERE id = $1", [id]);
    },
    async others(id, freshMs) {
      const found = await db.query<ServerRow>(`
        SELECT * FROM (SELECT *, ${NOW_MS} - heartbeat_at AS age_ms FROM servers WHERE id <> $1) s
        WHERE age_ms <= $2 ORDER BY started_at, id COLLATE "C"`, [id, ms(freshMs)]);
      return found.rows.map(server);
    },
    async orphans() {
      return (await db.query<{ id: string }>(`SELECT id FROM (SELECT DISTINCT run_by AS id FROM jobs WHERE state = 'sending' AND run_by IS NOT NULL AND run_by NOT IN (SELECT id FROM servers)) AS o ORDER BY id COLLATE "C"`)).rows.map((r) => r.id);
    },
  };
}

/**
 * Named leases on PostgreSQL: a take is one statement (an upsert whose update holds only
 * when the lease is free, lapsed or the holder's own), so of servers taking at once,
 * exactly one holds it; the row lock orders them. `excluded.until_at - ttl` is the
 * statement's time now.
 */
export function pgLeases(db: Queryable): LeaseStore {
  return {
    async take(name, holder, ttlMs) {
      const found = await db.query<{ epoch: number }>(`
        INSERT INTO leases (name, holder, until_at, epoch) VALUES ($1, $2, ${NOW_MS} + $3, 1)
        ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_at = excluded.until_at,
          epoch = CASE WHEN leases.until_at <= excluded.until_at - $3 THEN leases.epoch + 1 ELSE leases.epoch END
        WHERE leases.holder = excluded.holder OR leases.until_at <= excluded.until_at - $3
        RETURNING epoch`, [name, holder, ms(ttlMs)]);
      return found.rows[0]?.epoch;
    },
    async release(name, holder) {
      await db.query("UPDATE leases SET until_at = 0 WHERE name = $1 AND holder = $2", [name, holder]);
    },
    async drop(name, holder) {
      await db.query("DELETE FROM leases WHERE name = $1 AND holder = $2", [name, holder]);
    },
    async list() {
      const found = await db.query(`SELECT *, until_at - ${NOW_MS} AS left_ms FROM leases ORDER BY name COLLATE "C"`);
      return found.rows.map((r) => ({ name: r.name, holder: r.holder, untilAt: r.until_at, epoch: r.epoch, leftMs: r.left_ms }));
    },
  };
}

/**
 * The settings page's sessions on PostgreSQL. An open is one statement: the count of the
 * other sessions lasting and the upsert replacing the user's own together, so a user
 * signing in on two servers at once keeps one session.
 */
export function pgAppSessions(db: Queryable): AppSessionStore {
  return {
    async open(tokenHash, session, now, max) {
      const found = await db.query(`
        INSERT INTO app_sessions (token_hash, location_id, user_id, role, expires_at)
        SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint WHERE (SELECT count(*) FROM app_sessions
          WHERE expires_at > $6 AND NOT (location_id = $2 AND user_id = $3)) < $7
        ON CONFLICT (location_id, user_id) DO UPDATE SET token_hash = excluded.token_hash, role = excluded.role,
          expires_at = excluded.expires_at`, [tokenHash, session.locationId, session.userId, session.role, ms(session.expiresAt), ms(now), max]);
      return (found.rowCount ?? 0) > 0;
    },
    async get(tokenHash, now) {
      const found = await db.query("SELECT * FROM app_sessions WHERE token_hash = $1 AND expires_at > $2", [tokenHash, ms(now)]);
      const row = found.rows[0];
      return row && { locationId: row.location_id, userId: row.user_id, role: row.role, expiresAt: row.expires_at };
    },
    async drop(tokenHash) {
      await db.query("DELETE FROM app_sessions WHERE token_hash = $1", [tokenHash]);
    },
    async prune(now) {
      return (await db.query("DELETE FROM app_sessions WHERE expires_at <= $1", [ms(now)])).rowCount ?? 0;
    },
  };
}
