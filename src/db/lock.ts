import { closeSync, existsSync, openSync, realpathSync } from "node:fs";
import Database from "better-sqlite3";
import { errorMessage } from "../errors.ts";
import { nativeBinding } from "../sea/addon.ts";

/** The commands that hold the lock: serve for its life, the others while they rewrite the file. */
export type LockHolder = "serve" | "rekey" | "migrate";

export interface DbLock {
  /** `<db>.lock`, beside the database file (symlinks resolved). */
  path: string;
  release(): void;
}

/**
 * Takes `<db>.lock` (the database must exist), or throws naming who holds it and what to
 * do. `serve` holds it while it runs; `rekey` and `migrate` while they work: a server
 * sealing with the old key after a rekey, or writing the old schema after a migrate,
 * leaves a file that no key or bridge can start. The other commands share the database
 * with serve and take no lock.
 *
 * The lock is a write transaction SQLite holds open on a small side database: SQLite
 * locks with fcntl(), which the kernel releases when the process dies, even by kill -9,
 * so a crashed serve never leaves a stale lock, and no pid (which the system may give
 * to another process) decides anything. The holder's pid and command are written before
 * the lock is taken, for the message only.
 */
export function lockDb(dbPath: string, holder: LockHolder): DbLock {
  if (dbPath === ":memory:") return { path: "", release() {} };
  // Beside the file itself, as SQLite's -wal: two paths to one database (a symlink) share one lock.
  const path = `${realpathSync(dbPath)}.lock`;
  const db = openLockFile(dbPath, path);
  try {
    // Record who we are, then hold a write lock until release: readers (the refused
    // process reading the holder) may read meanwhile, writers may not.
    if (!begin(db)) throw heldBy(db, dbPath, path);
    db.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, command TEXT NOT NULL, since TEXT NOT NULL)");
    db.exec("DELETE FROM holder");
    db.prepare("INSERT INTO holder VALUES (?, ?, ?)").run(process.pid, holder, new Date().toISOString());
    db.exec("COMMIT");
    // Another process may take it between COMMIT and here: then it is the holder, and we are refused.
    if (!begin(db)) throw heldBy(db, dbPath, path);
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    path,
    release() {
      if (db.open) db.close(); // closing ends the transaction: the lock is free
    },
  };
}

function openLockFile(dbPath: string, path: string): Database.Database {
  try {
    // Born 0600 like the database; it holds only a pid and a command name.
    if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
    const binding = nativeBinding(dbPath);
    // timeout 0: a held lock is refused at once, not waited for.
    return new Database(path, { timeout: 0, ...(binding ? { nativeBinding: binding as unknown as string } : {}) });
  } catch (error) {
    throw new Error(`cannot open the lock file ${path}: ${errorMessage(error)} (bridge needs to read and write it and its directory)`, { cause: error });
  }
}

/** True when this connection now holds the write lock; false when another process does. */
function begin(db: Database.Database): boolean {
  try {
    db.exec("BEGIN IMMEDIATE");
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === "SQLITE_BUSY") return false;
    throw error;
  }
}

/** Who holds the lock, and what the operator does about it. */
function heldBy(db: Database.Database, dbPath: string, path: string): Error {
  const who = readHolder(db);
  const what = who ? `bridge ${who.command} (pid ${who.pid}, since ${who.since})` : "another bridge process";
  const todo =
    who?.command === "serve"
      ? "stop bridge serve first (systemctl stop bridge), then run this again"
      : "wait for it to finish, or stop bridge serve (systemctl stop bridge), then run this again";
  return new Error(`${dbPath} is in use by ${what}, which holds ${path}: ${todo}`);
}

function readHolder(db: Database.Database): { pid: number; command: string; since: string } | undefined {
  try {
    return db.prepare<[], { pid: number; command: string; since: string }>("SELECT pid, command, since FROM holder").get();
  } catch {
    return undefined; // the holder is writing it this instant, or the file is new
  }
}
