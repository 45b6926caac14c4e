import type { Sealer } from "../../db/sealer.ts";
import type { TokenRows } from "../contract.ts";
import type { Queryable } from "./pool.ts";

/** The tables whose rows hold a refresh token, and each one's id column. */
type TokenTable = { table: "tokens"; id: "location_id" } | { table: "companies"; id: "company_id" };

/** The database's clock in ms: the one clock all servers share. */
const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/** Whether a statement changed a row. */
export async function changed(db: Queryable, sql: string, params: unknown[]): Promise<boolean> {
  return ((await db.query(sql, params)).rowCount ?? 0) > 0;
}

/**
 * The refreshed pair, the row's removal and the refresh lease on PostgreSQL, as
 * src/db/token-rows.ts on SQLite: the lease is taken only while nobody holds it and the
 * pair is the one read (its serial), one statement each, so servers never spend one
 * refresh token twice. The lease's term runs on the database's clock, not the servers'.
 */
export function pgTokenRows(db: Queryable, sealer: Sealer, { table, id }: TokenTable): TokenRows {
  return {
    async updateTokens(rowId, accessToken, refreshToken, expiresAt, now) {
      const access = sealer.seal(accessToken, { table, column: "access_token", row: rowId });
      const refresh = sealer.seal(refreshToken, { table, column: "refresh_token", row: rowId });
      return changed(db, `
        UPDATE ${table} SET access_token = $1, refresh_token = $2, expires_at = $3, updated_at = $4,
          refresh_error = '', refresh_lease_until = 0, token_serial = token_serial + 1
        WHERE ${id} = $5`, [access, refresh, expiresAt, now, rowId]);
    },
    async delete(rowId) {
      return changed(db, `DELETE FROM ${table} WHERE ${id} = $1`, [rowId]);
    },
    // On the database's clock, as every lease of several servers: the caller's gives only the term (until - now).
    async tryLease(rowId, serial, now, until) {
      return changed(db, `
        UPDATE ${table} SET refresh_lease_until = ${NOW_MS} + $1
        WHERE ${id} = $2 AND token_serial = $3 AND refresh_lease_until < ${NOW_MS}`, [Math.max(0, Math.round(until - now)), rowId, serial]);
    },
    async releaseLease(rowId, serial, refreshError = "") {
      await db.query(`UPDATE ${table} SET refresh_lease_until = 0, refresh_error = $1 WHERE ${id} = $2 AND token_serial = $3`, [
        refreshError, rowId, serial,
      ]);
    },
  };
}
