import type { Db } from "./index.ts";

/** The tables whose rows hold a refresh token, and each one's id column. */
type TokenTable = { table: "tokens"; id: "location_id" } | { table: "companies"; id: "company_id" };

export type Lease = ReturnType<typeof createLease>;

/**
 * The refresh lease of a row holding a refresh token (a location's or an agency's), so
 * that the server and a CLI process never spend one single-use refresh token twice. It
 * is taken only while nobody holds it and the tokens are still the ones read (the row's
 * token serial): a process that lost the race reads again instead.
 */
export function createLease(db: Db, { table, id }: TokenTable) {
  const take = db.prepare<[number, string, number, number]>(`
    UPDATE ${table} SET refresh_lease_until = ? WHERE ${id} = ? AND token_serial = ? AND refresh_lease_until < ?`);
  // Only our own lease: a newer token write (serial) means it was already released.
  const give = db.prepare<[string, string, number]>(`
    UPDATE ${table} SET refresh_lease_until = 0, refresh_error = ? WHERE ${id} = ? AND token_serial = ?`);
  return {
    tryLease(rowId: string, serial: number, now: number, until: number): boolean {
      return take.run(until, rowId, serial, now).changes > 0;
    },
    /** `refreshError`: why the refresh token was refused for good ("" when it was not). */
    releaseLease(rowId: string, serial: number, refreshError = ""): void {
      give.run(refreshError, rowId, serial);
    },
  };
}
