import { closeSync, constants, existsSync, openSync, readSync } from "node:fs";
import Database from "better-sqlite3";
import { errorMessage } from "../errors.ts";
import { AddonError, nativeBinding } from "../sea/addon.ts";
import { makeFilesPrivate, refuseOthersFiles } from "./private-files.ts";
import type { Db } from "./db.ts";
import { migrate, SCHEMA_VERSION, SchemaBehindError, schemaVersion } from "./schema.ts";

export type { Db };

export interface OpenOptions {
  /** Refuse a new or empty file too: only `serve` makes the database. */
  existing?: boolean;
  warn?: (message: string) => void;
  /**
   * Open a database of an older schema as it is, for the caller to back it up and
   * migrate it (`upgradeDb`); otherwise it is refused with what to do.
   */
  keepOlderSchema?: boolean;
}

/**
 * Opens (creating it 0600 if needed) the one SQLite file bridge keeps; a new file gets
 * the schema at once. The server and every CLI command open the same file.
 * An existing file of an older schema is refused unless `keepOlderSchema`; one of a
 * newer schema always is.
 * Another program's database is refused untouched; `existing`: so is a new or empty file.
 * So are files of another user (the database, its -wal and -shm); ours that other users
 * may read or write are made 0600, and `warn` is told.
 */
export function openDb(path: string, options: OpenOptions = {}): Db {
  try {
    refuseOthersFiles(path);
    const db = open(path, options.existing ?? false, options.keepOlderSchema ?? false);
    try {
      for (const change of makeFilesPrivate(path)) options.warn?.(change);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  } catch (error) {
    // Each names what failed and what to do; the addon's is about no database file at all.
    if (error instanceof SchemaBehindError || error instanceof AddonError) throw error;
    const reason = errorMessage(error);
    // SQLite's own words name neither the file nor what to check.
    const hint = /unable to open|readonly|read-only/.test(reason) ? " (bridge needs to read and write the file and its directory)" : "";
    throw new Error(`cannot open database ${path}: ${reason}${hint}`, { cause: error });
  }
}

function open(path: string, existing: boolean, keepOlderSchema: boolean): Db {
  const binding = nativeBinding(path);
  // @types/better-sqlite3 only knows a path here; the library also takes the loaded addon.
  const options = binding ? { nativeBinding: binding as unknown as string } : {};
  let walFile = false;
  if (path !== ":memory:") {
    // Create the file ourselves so it is born 0600: it holds tokens and API keys.
    // SQLite gives its -wal and -shm files the same mode as the database.
    if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
    // bridge's own files are all in WAL mode: looked at on the one connection below.
    else if (inWalMode(path)) walFile = true;
    else refuseForeign(path, existing, options);
  }
  const db = new Database(path, options);
  try {
    if (walFile) refuseForeignOn(db, path, existing, options);
    setUp(db);
    checkSchema(db, path, keepOlderSchema);
  } catch (error) {
    if (db.open) db.close();
    throw error;
  }
  return db;
}

function setUp(db: Db): void {
  db.exec(
    "PRAGMA journal_mode = WAL;" +
      // FULL: a webhook is acknowledged only after its job is on disk, even on power loss.
      "PRAGMA synchronous = FULL;" +
      // The server and a CLI process may write at once; wait instead of failing.
      "PRAGMA busy_timeout = 5000;" +
      "PRAGMA foreign_keys = ON;" +
      // SQLite's own default page cache. better-sqlite3 builds it eight times larger, and the
      // server filled that under load with rows long since answered, for no more intake.
      "PRAGMA cache_size = -2000",
  );
}

function checkSchema(db: Db, path: string, keepOlderSchema: boolean): void {
  const version = schemaVersion(db);
  if (version > SCHEMA_VERSION) {
    throw new Error(`database schema version ${version} is newer than this bridge (${SCHEMA_VERSION}); upgrade bridge`);
  }
  // A new file holds nothing to lose or to roll back to: no backup, no refusal.
  if (version === 0) migrate(db);
  else if (version < SCHEMA_VERSION && !keepOlderSchema) throw new SchemaBehindError(path, version);
}

/**
 * Looks before it changes anything (WAL mode, the schema): another program's database
 * is refused as it is; so is an empty file, unless `bridge serve` is to make it ours.
 * Files not in WAL mode (never bridge's, save a new one) are looked at through a
 * read-only connection of their own.
 */
function refuseForeign(path: string, existing: boolean, options: Database.Options): void {
  const probe = new Database(path, { ...options, readonly: true, fileMustExist: true });
  try {
    const problem = foreignProblem(probe, existing);
    if (problem) throw new Error(problem);
  } finally {
    probe.close();
  }
}

/**
 * refuseForeign on the connection bridge goes on with, before anything is changed. One
 * refused is closed under a read-only connection: the last connection to close a WAL
 * database copies the WAL into the file, and a reader still there stops it (and a
 * read-only connection never does it).
 */
function refuseForeignOn(db: Db, path: string, existing: boolean, options: Database.Options): void {
  const problem = foreignProblem(db, existing);
  if (!problem) return;
  let keeper: Db | undefined;
  try {
    keeper = new Database(path, { ...options, readonly: true, fileMustExist: true });
    keeper.prepare("SELECT count(*) FROM sqlite_schema").get();
  } catch {
    // No reader to hold it: SQLite may copy the WAL in as it closes. The refusal stands.
  }
  db.close();
  keeper?.close();
  throw new Error(problem);
}

/** Why the file open on `db` is not bridge's database to use; undefined when it is. */
function foreignProblem(db: Db, existing: boolean): string | undefined {
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
  if (tables.includes("tokens") && tables.includes("jobs")) return undefined;
  if (tables.length > 0) return `not a bridge database (it holds other tables: ${tables.slice(0, 3).join(", ")})`;
  if (existing) return "not a bridge database (`bridge serve` creates one)";
  return undefined;
}

/**
 * The file is an SQLite database in WAL mode: its header's read and write versions are 2.
 * False for whatever cannot be read here (a directory, a FIFO: NONBLOCK, so it does not
 * hang us): the read-only probe then lets SQLite say what is wrong, as it always did.
 */
function inWalMode(path: string): boolean {
  const header = Buffer.alloc(20);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    if (readSync(fd, header, 0, 20, 0) < 20) return false;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
  return header.toString("latin1", 0, 16) === "SQLite format 3\0" && header[18] === 2 && header[19] === 2;
}
