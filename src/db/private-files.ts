import { chmodSync, realpathSync, statSync, type Stats } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The database and its -wal and -shm hold tokens and API keys. Before SQLite opens them:
 * a file another user owns is refused untouched (they could read it, or planted it for
 * SQLite to use), and so is a directory every user may write that is not sticky (anyone
 * could replace the files). Root gets no pass: a root-run bridge refuses another user's
 * files too, rather than leave root-owned -wal and -shm that user's bridge cannot open.
 */
export function refuseOthersFiles(path: string): void {
  const files = databaseFiles(path);
  if (!files) return;
  const dir = stats(dirname(files[0]));
  if (dir && dir.mode & 0o002 && !(dir.mode & 0o1000)) {
    throw new Error(
      `directory ${dirname(files[0])} is writable by every user and not sticky (mode ${octal(dir)}): anyone could replace the database; ` +
        "chmod o-w it, or keep the database elsewhere",
    );
  }
  for (const file of files) refuseOthers(file);
}

/**
 * Once open (SQLite has made its -wal and -shm): refuses again what appeared meanwhile,
 * and makes each of our files that group or others may use 0600. Returns what it changed,
 * for the caller to tell: whoever could read a file before may have copied it.
 */
export function makeFilesPrivate(path: string): string[] {
  const changed: string[] = [];
  for (const file of databaseFiles(path) ?? []) {
    const found = refuseOthers(file);
    if (!found || !(found.mode & 0o077)) continue;
    chmodSync(file, 0o600);
    changed.push(`${file} was mode ${octal(found)}, open to other users: changed to 0600`);
  }
  return changed;
}

/** The files SQLite uses for `path`: it resolves symlinks, so its -wal and -shm sit beside the target. */
function databaseFiles(path: string): [string, string, string] | undefined {
  if (path === ":memory:" || path === "" || process.getuid === undefined) return undefined;
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    try {
      real = join(realpathSync(dirname(path)), basename(path)); // not made yet
    } catch {
      // No such directory: SQLite says so.
    }
  }
  return [real, `${real}-wal`, `${real}-shm`];
}

/** The file's stats when it is a regular file of ours; throws when it is another user's. */
function refuseOthers(file: string): Stats | undefined {
  const found = stats(file);
  if (!found?.isFile()) return undefined; // absent, or a directory SQLite will refuse itself
  const uid = process.getuid!();
  if (found.uid === uid) return found;
  throw new Error(
    `${file} is owned by uid ${found.uid}, not by uid ${uid} running bridge (mode ${octal(found)}): another user may read it ` +
      `or have planted it. Run bridge as its owner, or chown it to uid ${uid} and chmod 600 it; remove it if it is not bridge's`,
  );
}

function stats(path: string): Stats | undefined {
  return statSync(path, { throwIfNoEntry: false });
}

function octal(found: Stats): string {
  return `0${(found.mode & 0o7777).toString(8)}`;
}
