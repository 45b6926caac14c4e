import { openEither, SEALED_COLUMNS } from "../../db/rekey.ts";
import type { Sealer } from "../../db/sealer.ts";
import { refuseWhileAlive } from "./open.ts";
import { SCHEMA_LOCK, transaction, type Pool } from "./pool.ts";

/**
 * `bridge rekey` on PostgreSQL, as src/db/rekey.ts on SQLite: every sealed value opened
 * with `current` and sealed again with `next`, in one transaction under the schema lock
 * (no migrate meanwhile), its rows locked (a token refreshed meanwhile is not
 * overwritten with its old value). Refused while a server is alive: it would go on
 * sealing with the old key. A value neither key opens rolls everything back.
 */
export async function rekeyPostgres(pool: Pool, current: Sealer, next: Sealer): Promise<number> {
  return transaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
    await refuseWhileAlive(client, "rekey");
    let count = 0;
    for (const { table, row, columns } of SEALED_COLUMNS) {
      const rows = await client.query<Record<string, string | null>>(`SELECT ${[row, ...columns].join(", ")} FROM ${table} FOR UPDATE`);
      const sets = columns.map((c, i) => `${c} = $${i + 2}`).join(", ");
      for (const values of rows.rows) {
        const sealed = columns.map((column) => {
          const stored = values[column];
          if (!stored) return stored; // unset ("" or NULL) stays as it is
          count++;
          const context = { table, column, row: String(values[row]) };
          return next.seal(openEither(current, next, stored, context), context);
        });
        await client.query(`UPDATE ${table} SET ${sets} WHERE ${row} = $1`, [values[row], ...sealed]);
      }
    }
    return count;
  });
}
