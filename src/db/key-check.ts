import type { Db } from "./index.ts";
import { SEALED_COLUMNS, type SealedColumns } from "./rekey.ts";
import { SealError, type Sealer } from "./sealer.ts";

/** A sealed value as stored, with the place (table, column, row) it is bound to. */
export interface SealedValue {
  stored: string;
  context: { table: string; column: string; row: string };
}

/**
 * The start-up check of BRIDGE_ENCRYPTION_KEY against every sealed value. Throws when
 * values are sealed and none fits the key (no key, or the wrong one: the whole database
 * is refused, nothing would work). Otherwise returns why each value that does not fit
 * cannot be opened, its table, column and row named: one value sealed with another key
 * stops only what needs it (that location's messages wait), not every location, nor
 * the CLI that mends it. The key id decides (sealer.fits), so no value is decrypted.
 */
export function checkSealed(db: Db, sealer: Sealer, sealed: readonly SealedColumns[] = SEALED_COLUMNS): string[] {
  const values = sealed.flatMap((columns) => sealedValues(db.prepare<[], Record<string, string>>(sealedQuery(columns)).all(), columns));
  return judgeSealed(values, sealer);
}

/** The statement that reads a table's sealed values (SQLite's and PostgreSQL's alike). */
export function sealedQuery({ table, row, columns }: SealedColumns): string {
  const anySealed = columns.map((c) => `${c} LIKE 'enc:%'`).join(" OR ");
  return `SELECT ${[row, ...columns].join(", ")} FROM ${table} WHERE ${anySealed}`;
}

/** The sealed values of rows sealedQuery read. */
export function sealedValues(rows: readonly Record<string, unknown>[], { table, row, columns }: SealedColumns): SealedValue[] {
  return rows.flatMap((values) =>
    columns
      .map((column) => ({ stored: String(values[column] ?? ""), context: { table, column, row: String(values[row]) } }))
      .filter(({ stored }) => stored.startsWith("enc:")),
  );
}

/** checkSealed's verdict on the values, wherever they were read. */
export function judgeSealed(values: readonly SealedValue[], sealer: Sealer): string[] {
  let fitting = 0;
  const unfit: SealError[] = [];
  for (const { stored, context } of values) {
    if (sealer.fits(stored)) fitting++;
    else unfit.push(whyNot(sealer, stored, context));
  }
  const [first] = unfit;
  if (first && fitting === 0) {
    if (first.reason === "no_key") throw first;
    throw new SealError("wrong_key", "BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");
  }
  return unfit.map((error) => error.message);
}

function whyNot(sealer: Sealer, stored: string, context: SealedValue["context"]): SealError {
  try {
    sealer.open(stored, context);
  } catch (error) {
    if (error instanceof SealError) return error;
    throw error;
  }
  throw new Error(`${context.table}.${context.column} of ${context.row}: the key check and the sealer disagree`);
}
