import type { Db } from "./index.ts";
import type { Sealer } from "./sealer.ts";

/** The tables whose rows hold a refresh token, and each one's id column. */
type TokenTable = { table: "tokens"; id: "location_id" } | { table: "companies"; id: "company_id" };

/** The columns every token row has. */
export interface TokenColumns {
  access_token: string;
  refresh_token: string;
  expires_at: number;
  installed_at: number;
  updated_at: number;
  refresh_error: string;
  token_serial: number;
}

/** What every token record holds. Times are ms since the epoch. */
export type TokenFields = ReturnType<typeof tokenFields>;

/** Those columns as a record's fields, the pair opened for the row it was sealed in. */
export function tokenFields(row: TokenColumns, sealer: Sealer, table: TokenTable["table"], rowId: string) {
  return {
    accessToken: sealer.open(row.access_token, { table, column: "access_token", row: rowId }),
    refreshToken: sealer.open(row.refresh_token, { table, column: "refresh_token", row: rowId }),
    expiresAt: row.expires_at,
    installedAt: row.installed_at,
    updatedAt: row.updated_at,
    /** Why the refresh token was refused for good; "" when it is fine. */
    refreshError: row.refresh_error,
    /** Changes with every token write; a refresh lease is taken against it. */
    serial: row.token_serial,
  };
}

/**
 * What a location's token row and an agency's have in common: the refreshed pair written
 * in place, the row removed, and the refresh lease, so that the server and a CLI process
 * never spend one single-use refresh token twice. The lease is taken only while nobody
 * holds it and the tokens are still the ones read (the row's token serial): a process
 * that lost the race reads again instead.
 */
export function createTokenRows(db: Db, sealer: Sealer, { table, id }: TokenTable) {
  const updatePair = db.prepare<[string, string, number, number, string]>(`
    UPDATE ${table} SET access_token = ?, refresh_token = ?, expires_at = ?, updated_at = ?,
      refresh_error = '', refresh_lease_until = 0, token_serial = token_serial + 1
    WHERE ${id} = ?`);
  const remove = db.prepare<[string]>(`DELETE FROM ${table} WHERE ${id} = ?`);
  const take = db.prepare<[number, string, number, number]>(`
    UPDATE ${table} SET refresh_lease_until = ? WHERE ${id} = ? AND token_serial = ? AND refresh_lease_until < ?`);
  // Only our own lease: a newer token write (serial) means it was already released.
  const give = db.prepare<[string, string, number]>(`
    UPDATE ${table} SET refresh_lease_until = 0, refresh_error = ? WHERE ${id} = ? AND token_serial = ?`);
  return {
    /** Stores a refreshed pair; false when the row is gone. */
    updateTokens(rowId: string, accessToken: string, refreshToken: string, expiresAt: number, now: number): boolean {
      const access = sealer.seal(accessToken, { table, column: "access_token", row: rowId });
      const refresh = sealer.seal(refreshToken, { table, column: "refresh_token", row: rowId });
      return updatePair.run(access, refresh, expiresAt, now, rowId).changes > 0;
    },
    delete(rowId: string): boolean {
      return remove.run(rowId).changes > 0;
    },
    tryLease(rowId: string, serial: number, now: number, until: number): boolean {
      return take.run(until, rowId, serial, now).changes > 0;
    },
    /** `refreshError`: why the refresh token was refused for good ("" when it was not). */
    releaseLease(rowId: string, serial: number, refreshError = ""): void {
      give.run(refreshError, rowId, serial);
    },
  };
}
