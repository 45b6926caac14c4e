import type { Db } from "./db.ts";
import { MIGRATIONS } from "./migrations.ts";

/** The schema version this bridge works with: one per migration. */
export const SCHEMA_VERSION = MIGRATIONS.length;

export function schemaVersion(db: Db): number {
  return db.pragma("user_version", { simple: true }) as number;
}

/**
 * An existing database of an older schema, opened by a command that may not change it:
 * only `serve` and `bridge migrate` do, after a backup, so that an upgrade can be rolled
 * back and an older server still running is never left with a schema it refuses.
 */
export class SchemaBehindError extends Error {
  readonly version: number;

  constructor(path: string, version: number) {
    super(
      `database ${path} is at schema version ${version}; this bridge needs ${SCHEMA_VERSION}: ` +
        "stop bridge serve, then run `bridge migrate` (a backup is written first), or start the new bridge serve",
    );
    this.name = "SchemaBehindError";
    this.version = version;
  }
}

/** Applies the migrations newer than the file's user_version, all in one transaction. */
export function migrate(db: Db): void {
  const current = schemaVersion(db);
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this bridge (${SCHEMA_VERSION}); upgrade bridge`);
  }
  if (current === SCHEMA_VERSION) return;
  db.transaction(() => {
    for (const sql of MIGRATIONS.slice(current)) db.exec(sql);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/** SQLite's quick_check: its first `limit` findings, none when the file is sound. */
export function quickCheck(db: Db, limit: number): string[] {
  const found = db.pragma(`quick_check(${Math.trunc(limit)})`, { simple: false }) as { quick_check: string }[];
  return found.map((row) => row.quick_check).filter((line) => line !== "ok");
}
