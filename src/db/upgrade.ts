import { existsSync } from "node:fs";
import { writeBackup } from "./backup.ts";
import type { Db } from "./index.ts";
import { migrate, SCHEMA_VERSION, schemaVersion } from "./schema.ts";

export interface Upgrade {
  from: number;
  to: number;
  /** Where the database was copied before it changed; absent when nothing changed. */
  backup?: string;
}

/**
 * Brings an existing database (opened with `keepOlderSchema`) to this bridge's schema,
 * after copying it to `<path>.backup-v<N>`, N its version: the copy is what a roll back
 * to the older bridge starts from. `tell` hears of the backup before the schema changes.
 */
export async function upgradeDb(db: Db, path: string, tell: (message: string) => void): Promise<Upgrade> {
  const from = schemaVersion(db);
  if (from === SCHEMA_VERSION) return { from, to: from };
  const backup = await writeBackup(db, backupName(path, from));
  tell(`database ${path} is at schema version ${from}: backed up to ${backup} (mode 0600) before migrating to ${SCHEMA_VERSION}`);
  migrate(db);
  return { from, to: SCHEMA_VERSION, backup };
}

/** `<path>.backup-v<N>`; an earlier backup of that version is kept, the new one named by the time. */
function backupName(path: string, version: number): string {
  const name = `${path}.backup-v${version}`;
  return existsSync(name) ? `${name}.${new Date().toISOString().replace(/[:.]/g, "-")}` : name;
}
