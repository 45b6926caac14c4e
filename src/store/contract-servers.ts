/**
 * What several servers on one database share (docs/cli.md, `bridge status`):
 * who is running, who holds which periodic work, the settings page's sessions, and what
 * one server read for all (a key's Cast unsubscribed list).
 * Times are on one clock for every server: on PostgreSQL the database's, on SQLite
 * (one file, one machine) the machine's.
 */

/**
 * A server whose heartbeat is older than this is presumed dead: its sends are rescued, and
 * `migrate` and `rekey` no longer wait for it. One figure for both, so that no server is
 * rescued and running at once, nor left running while a key or schema changes under it.
 */
export const SERVER_ALIVE_MS = 60_000;

/** A running server as its heartbeat row says. */
export interface ServerRecord {
  id: string;
  /** The address it gave (its host name, or CAST_LOCAL_ADDRESS). */
  address: string;
  startedAt: number;
  heartbeatAt: number;
  /** How long ago its last heartbeat was, on the store's clock. */
  ageMs: number;
}

export interface ServerStore {
  /** Records the server's heartbeat now (its row made at its first beat). */
  beat(id: string, address: string): Promise<void>;
  /** Every server row, the longest running first. */
  list(): Promise<ServerRecord[]>;
  /** The server stopped cleanly: its row goes. */
  gone(id: string): Promise<void>;
  /** The other servers whose heartbeat is at most `freshMs` old. */
  others(id: string, freshMs: number): Promise<ServerRecord[]>;
  /** The servers that claimed a job still sending but have no row (gone, or removed by hand): their sends are anybody's to rescue. */
  orphans(): Promise<string[]>;
}

/** A named lease as its row says. */
export interface LeaseRecord {
  name: string;
  holder: string;
  untilAt: number;
  /** Grows at each new term (a take after the lease lapsed), so a former holder's late write is told apart. */
  epoch: number;
  /** How long it still holds, on the store's clock: 0 or less, it lapsed. */
  leftMs: number;
}

/** One holder at a time per name, until a time limit: the leader's work, an exchange in progress. */
export interface LeaseStore {
  /**
   * Takes the lease `name` for `holder` for `ttlMs` when it is free, lapsed, or already
   * the holder's (then renewed): the epoch of its term. Undefined when another holds it.
   */
  take(name: string, holder: string, ttlMs: number): Promise<number | undefined>;
  /** Lets the lease go when `holder` holds it (its epoch kept: the next take starts a new term). */
  release(name: string, holder: string): Promise<void>;
  /** Removes the lease when `holder` holds it: a one-off lease (an exchange's) whose term needs no number after. */
  drop(name: string, holder: string): Promise<void>;
  /** Every lease row, by name; a lapsed one with leftMs <= 0. */
  list(): Promise<LeaseRecord[]>;
}

/** A settings-page session as stored: found by its token's SHA-256 only. */
export interface AppSession {
  locationId: string;
  userId: string;
  role: string;
  expiresAt: number;
}

export interface AppSessionStore {
  /**
   * Opens the session of `tokenHash`, replacing the same user's at the location, in one
   * write; false when `max` other sessions last at `now` (nothing is changed then).
   */
  open(tokenHash: string, session: AppSession, now: number, max: number): Promise<boolean>;
  /** The session while it lasts at `now`. */
  get(tokenHash: string, now: number): Promise<AppSession | undefined>;
  drop(tokenHash: string): Promise<void>;
  /** Removes the sessions expired at `now`; how many. */
  prune(now: number): Promise<number>;
}

/** A number that unsubscribed through one of Cast's links, and the sender ID it left. */
export interface UnsubscribedNumber {
  phone: string;
  senderId: string;
}

/** A key's Cast unsubscribed list as a server last read it. */
export interface StoredUnsubscribed {
  /** The list; null when that read failed (sends then go without it). */
  entries: UnsubscribedNumber[] | null;
  /** How long ago it was read, on the store's clock. */
  ageMs: number;
}

/**
 * Cast's unsubscribed lists, by the key's tag: read by one server at a time (under the
 * lease `unsubscribed:<tag>`) and checked by every server's sends, so that one request a
 * key serves them all.
 */
export interface UnsubscribedStore {
  /** The key's last read list; undefined when none was ever stored. */
  get(tag: string): Promise<StoredUnsubscribed | undefined>;
  /** Stores what a read found now (null: it failed), replacing the last. */
  put(tag: string, entries: UnsubscribedNumber[] | null): Promise<void>;
  /** Deletes the lists last read more than `olderThanMs` ago (keys no send has used since); how many. */
  prune(olderThanMs: number): Promise<number>;
}
