/**
 * Each gateway key's send budget kept in the store: a token bucket per key (`tag`,
 * keyTag's), refilled at the key's rate, and a pause after the gateway's 429 on the key.
 * Where several servers share the store (PostgreSQL) every send of every server takes a
 * token here, so no key exceeds its rate whatever the number of servers
 * (../shared/SCALE_DESIGN.md, section 4; docs/operations.md). One server alone keeps the
 * key's budget in memory (src/core/delivery/scheduler.ts) and writes nothing here.
 */
export interface KeyBudgets {
  /** Other servers may share this store (PostgreSQL): a send takes its key's token here too. */
  readonly shared: boolean;
  /**
   * Takes one token of the key's bucket: 0 when taken, else the ms until one may be
   * (nothing taken), a pause included. A key never seen starts full (`burst` tokens).
   * One statement, on the store's clock: PostgreSQL's own, shared by every server; SQLite's
   * is the caller's, `now`.
   */
  take(tag: string, ratePerSecond: number, burst: number, now: number): Promise<number>;
  /**
   * A token taken for a send that did not go (another server claimed its job first) given
   * back, never above `burst`: a lost race spends nothing of the key's rate.
   */
  giveBack(tag: string, burst: number, now: number): Promise<void>;
  /** The gateway answered 429 on the key: no token for `forMs` from now, for every taker. */
  pause(tag: string, forMs: number, now: number): Promise<void>;
}
