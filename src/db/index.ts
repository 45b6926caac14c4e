import { closeSync, existsSync, openSync } from "node:fs";
import Database from "better-sqlite3";
import { errorMessage } from "../core/errors.ts";
import { MIGRATIONS } from "./migrations.ts";
import { nativeBinding } from "./native.ts";
import { makeFilesPrivate, refuseOthersFiles } from "./private-files.ts";

export type Db = Database.Database;

/**
 * Opens (creating it 0600 if needed) the one SQLite file bridge keeps, and brings
 * its schema up to date. The server and every CLI command open the same file.
 * Another program's database is refused untouched; `existing`: so is a new or empty file.
 * So are files of another user (the database, its -wal and -shm); ours that other users
 * may read or write are made 0600, and `warn` is told.
 */
export function openDb(path: string, options: { existing?: boolean; warn?: (message: string) => void } = {}): Db {
  try {
    refuseOthersFiles(path);
    const db = open(path, options.existing ?? false);
    try {
      for (const change of makeFilesPrivate(path)) options.warn?.(change);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  } catch (error) {
    const reason = errorMessage(error);
    // SQLite's own words name neither the file nor what to check.
    const hint = /unable to open|readonly|read-only/.test(reason) ? " (bridge needs to read and write the file and its directory)" : "";
    throw new Error(`cannot open database ${path}: ${reason}${hint}`, { cause: error });
  }
}

function open(path: string, existing: boolean): Db {
  const binding = nativeBinding(path);
  // @types/better-sqlite3 only knows a path here; the library also takes the loaded addon.
  const options = binding ? { nativeBinding: binding as unknown as string } : {};
  if (path !== ":memory:") {
    if (existsSync(path)) refuseForeign(path, existing, options);
    // Create the file ourselves so it is born 0600: it holds tokens and API keys.
    // SQLite gives its -wal and -shm files the same mode as the database.
    else closeSync(openSync(path, "a", 0o600));
  }
  const db = new Database(path, options);
  db.pragma("journal_mode = WAL");
  // FULL: a webhook is acknowledged only after its job is on disk, even on power loss.
  db.pragma("synchronous = FULL");
  // The server and a CLI process may write at once; wait instead of failing.
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  // SQLite's own default page cache. better-sqlite3 builds it eight times larger, and the
  // server filled that under load with rows long since answered, for no more intake.
  db.pragma("cache_size = -2000");
  migrate(db);
  return db;
}

/**
 * Looks before it changes anything (WAL mode, the schema): another program's database
 * is refused as it is; so is an empty file, unless `bridge serve` is to make it ours.
 */
function refuseForeign(path: string, existing: boolean, options: Database.Options): void {
  const probe = new Database(path, { ...options, readonly: true, fileMustExist: true });
  try {
    const tables = probe.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
    if (tables.includes("tokens") && tables.includes("jobs")) return;
    if (tables.length > 0) throw new Error(`not a bridge database (it holds other tables: ${tables.slice(0, 3).join(", ")})`);
    if (existing) throw new Error("not a bridge database (`bridge serve` creates one)");
  } finally {
    probe.close();
  }
}

/** Applies the migrations newer than the file's user_version, all in one transaction. */
function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`database schema version ${current} is newer than this bridge (${MIGRATIONS.length}); upgrade bridge`);
  }
  if (current === MIGRATIONS.length) return;
  db.transaction(() => {
    for (const sql of MIGRATIONS.slice(current)) db.exec(sql);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
