import type { Sealer } from "./sealer.ts";
import type { Db } from "./index.ts";
import { sealedIn, type SecretColumn } from "./tokens.ts";

const COLUMNS: readonly SecretColumn[] = ["access_token", "refresh_token", "sms_api_key"];
const V1 = "enc:v1:";
const ANY_V1 = COLUMNS.map((column) => `${column} LIKE '${V1}%'`).join(" OR ");

type Row = { location_id: string } & Record<SecretColumn, string>;

/**
 * Re-seals as enc:v2 (bound to its row and column) every secret an earlier bridge sealed
 * as enc:v1, in one transaction; returns how many locations changed. A v1 value is bound
 * to nothing: moved to another row or column it would still open, so it is not left to
 * wait for its next write. Call it with the key, after `checkSealed`.
 */
export function resealV1(db: Db, sealer: Sealer): number {
  // Most starts find none: look first, so they take no write lock.
  if (!db.prepare(`SELECT 1 FROM tokens WHERE ${ANY_V1} LIMIT 1`).get()) return 0;
  const select = db.prepare<[], Row>(`SELECT location_id, ${COLUMNS.join(", ")} FROM tokens WHERE ${ANY_V1}`);
  const update = db.prepare<[Row]>(
    `UPDATE tokens SET ${COLUMNS.map((c) => `${c} = @${c}`).join(", ")} WHERE location_id = @location_id`,
  );
  // Immediate: a token refreshed by another process meanwhile is not overwritten with its old value.
  return db
    .transaction(() => {
      const rows = select.all();
      for (const row of rows) {
        for (const column of COLUMNS) {
          // One the key does not open is left as it is: the start-up check named it.
          if (!row[column].startsWith(V1) || !sealer.fits(row[column])) continue;
          const at = sealedIn(column, row.location_id);
          row[column] = sealer.seal(sealer.open(row[column], at), at);
        }
        update.run(row);
      }
      return rows.length;
    })
    .immediate();
}
