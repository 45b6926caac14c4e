import { errorMessage } from "../errors.ts";
import type { Sealer } from "./sealer.ts";
import type { Db } from "./index.ts";

/** A table's sealed columns, and the column naming the row each value is bound to. */
export interface SealedColumns {
  table: string;
  row: string;
  columns: readonly string[];
}

/**
 * Every column that holds a value sealed with BRIDGE_ENCRYPTION_KEY, bound (AES-GCM
 * associated data) to `table.column.<row value>`. A table that gains a sealed column
 * adds it here, or `bridge rekey` leaves it under the old key.
 */
export const SEALED_COLUMNS: readonly SealedColumns[] = [
  { table: "tokens", row: "location_id", columns: ["access_token", "refresh_token", "sms_api_key"] },
  { table: "companies", row: "company_id", columns: ["access_token", "refresh_token"] },
  { table: "gateway_keys", row: "key_tag", columns: ["api_key"] },
  { table: "location_gateways", row: "location_id", columns: ["android_password", "android_signing_key"] },
];

/**
 * Opens every sealed value with `current` and seals it again with `next`, all in one
 * transaction: a value neither key opens throws before anything is written, so the
 * database is left as it was. Returns how many non-empty values were sealed again.
 * A value already sealed with `next` is taken as it is: a file some of whose values
 * were sealed with the new key (by a process that had it) is finished, not refused.
 */
export function rekey(db: Db, current: Sealer, next: Sealer, sealed: readonly SealedColumns[] = SEALED_COLUMNS): number {
  return db
    .transaction(() => {
      let count = 0;
      for (const { table, row, columns } of sealed) {
        const rows = db.prepare<[], Record<string, string>>(`SELECT ${[row, ...columns].join(", ")} FROM ${table}`).all();
        const update = db.prepare(`UPDATE ${table} SET ${columns.map((c) => `${c} = @${c}`).join(", ")} WHERE ${row} = @${row}`);
        for (const values of rows) {
          for (const column of columns) {
            const context = { table, column, row: String(values[row]) };
            const stored = values[column] ?? "";
            if (stored === "") continue;
            values[column] = next.seal(openEither(current, next, stored, context), context);
            count++;
          }
          update.run(values);
        }
      }
      return count;
    })
    .immediate(); // a token refreshed meanwhile is not overwritten with its old value
}

/** The value `current` opens, else `next` (a value sealed again already); else throws naming its place. */
export function openEither(current: Sealer, next: Sealer, stored: string, context: { table: string; column: string; row: string }): string {
  try {
    return current.open(stored, context);
  } catch (error) {
    if (next.fits(stored)) return next.open(stored, context);
    const place = `${context.table}.${context.column} of ${context.row}`;
    const why = errorMessage(error);
    throw new Error(`${why.startsWith(place) ? why : `${place}: ${why}`} (neither the current key nor the new one opens it); nothing was changed`, {
      cause: error,
    });
  }
}
