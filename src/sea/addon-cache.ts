// The directory bridge unpacks its SQLite addon into (src/sea/addon.ts), and the
// checks that make loading from it safe.
//
// Whoever can write that file, or replace it or any directory above it, runs
// code as bridge (as root, for a service started as root). So the cache is never
// in a shared directory such as /tmp: every directory on its path must be owned
// by us or root and writable by nobody else, the file is opened without following
// symlinks, it is known for the embedded addon (see isOurs), and the file checked is
// the file loaded.
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  futimesSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import { join, resolve, sep } from "node:path";
import { errorMessage } from "../errors.ts";

export const ASSET = "better_sqlite3.node";
const EXAMPLE = "e.g. `XDG_CACHE_HOME=/var/lib/bridge/.cache bridge ...`";
export const FIX = `set XDG_CACHE_HOME to a private directory (it and every directory above it owned by you or root and writable only by its owner), ${EXAMPLE}`;

/**
 * Makes `path` a directory that only `uid` and root can change, creating what is
 * missing (0700), and returns its real path. Every directory from / down must be
 * owned by `uid` or root and not writable by group or others. A symlink on the way
 * is followed only when owned by `uid` or root (its directory is already checked,
 * so nobody else can have put it there or replace it); the real path is then
 * checked the same way.
 */
export function privateDir(path: string, uid: number): string {
  const absolute = resolve(path);
  walk(absolute, absolute, uid);
  const real = realpathSync.native(absolute);
  if (real !== absolute) walk(real, absolute, uid);
  return real;
}

/**
 * The modification time (seconds since the epoch) of every addon file bridge writes or
 * has compared. Any other write to the file sets its time to now, so a file of the
 * embedded size with this time is the one bridge wrote (synced before it was renamed in);
 * setting the time back takes the file's owner (us) or root, whom privateDir already
 * trusts with the directory.
 */
const STAMP = 1_000_000_000;

/**
 * Loads the addon `bytes` from `dir` (made by privateDir), first writing it there if
 * it is missing or differs from `bytes` (stale or tampered with). Returns its exports.
 */
export function loadAddon(dir: string, bytes: Uint8Array, uid: number): object {
  const file = join(dir, ASSET);
  let fd = openIfSame(file, bytes, uid);
  if (fd === undefined) {
    writeAside(file, bytes);
    fd = openIfSame(file, bytes, uid);
    if (fd === undefined) {
      throw new Error(`refusing to load the SQLite addon ${file}: it differs from the embedded one just after being written`);
    }
  }
  try {
    return dlopen(file, fd);
  } finally {
    closeSync(fd);
  }
}

/** Checks each directory of `path` from / down, creating missing ones; `asked` is the path as given, for messages. */
function walk(path: string, asked: string, uid: number): void {
  const names = path.split(sep).filter(Boolean);
  let current: string = sep;
  refuseUnsafe(current, lstatSync(current), uid, asked, names.length > 0);
  names.forEach((name, i) => {
    current = join(current, name);
    refuseUnsafe(current, lstatOrCreate(current), uid, asked, i < names.length - 1);
  });
}

function lstatOrCreate(dir: string): Stats {
  try {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (st) return st;
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== "EEXIST") throw cause; // EEXIST: another bridge was quicker
    }
    return lstatSync(dir);
  } catch (cause) {
    throw new Error(`cannot use ${dir} for the SQLite addon (${errorMessage(cause)}): ${FIX}`, { cause });
  }
}

/** `above`: a directory with more of the path below it, which a sticky bit makes safe (see writableByOthers). */
function refuseUnsafe(component: string, st: Stats, uid: number, asked: string, above: boolean): void {
  const problem = directoryProblem(st, uid, above);
  if (problem) throw new Error(`refusing to keep the SQLite addon in ${asked}: ${component} ${problem}; ${FIX}`);
}

function directoryProblem(st: Stats, uid: number, above: boolean): string | undefined {
  if (st.uid !== uid && st.uid !== 0) return `is owned by uid ${st.uid}`;
  if (st.isSymbolicLink()) return undefined; // A link's own mode means nothing; its target is checked by the real path.
  if (!st.isDirectory()) return "is not a directory";
  return writableByOthers(st, above);
}

function writableByOthers(st: Stats, above: boolean): string | undefined {
  if ((st.mode & 0o022) === 0) return undefined;
  // A sticky directory (/tmp) above ours: nobody else can rename or remove our entry in it,
  // and an entry someone else made first is theirs, which the next step refuses. The cache
  // directory itself never: anyone could add files to it.
  if (above && st.mode & 0o1000) return undefined;
  return `is writable by ${st.mode & 0o002 ? "others" : "its group"} (mode ${(st.mode & 0o7777).toString(8)})`;
}

/**
 * An open descriptor of `file` when it holds exactly `bytes`; undefined when it is
 * missing or holds something else. A file no one else should be able to make there
 * (a symlink, a device, someone else's, writable by others) is refused.
 */
function openIfSame(file: string, bytes: Uint8Array, uid: number): number | undefined {
  let fd: number;
  try {
    // NOFOLLOW: a symlink is refused (ELOOP), not followed. NONBLOCK: a FIFO does not hang us.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    const problem = code === "ELOOP" ? "is a symbolic link" : `cannot be opened (${errorMessage(cause)})`;
    throw new Error(`refusing to load the SQLite addon ${file}: it ${problem}; remove it`, { cause });
  }
  let same = false;
  try {
    const st = fstatSync(fd);
    const problem = fileProblem(st, uid);
    if (problem) throw new Error(`refusing to load the SQLite addon ${file}: it ${problem}; remove it`);
    same = isOurs(fd, st, bytes);
  } finally {
    if (!same) closeSync(fd);
  }
  return same ? fd : undefined;
}

function fileProblem(st: Stats, uid: number): string | undefined {
  if (!st.isFile()) return "is not a regular file";
  if (st.uid !== uid && st.uid !== 0) return `is owned by uid ${st.uid}`;
  return writableByOthers(st, false);
}

/**
 * One fstat when the file has the embedded size and bridge's time (STAMP): every start
 * after the first. Otherwise (a file an older bridge wrote, or one written by anything
 * else) byte for byte, and a file that holds the addon is given the time.
 */
function isOurs(fd: number, st: Stats, bytes: Uint8Array): boolean {
  if (st.size !== bytes.byteLength) return false;
  if (st.mtimeMs === STAMP * 1000) return true;
  if (!holds(fd, st.size, bytes)) return false;
  try {
    futimesSync(fd, STAMP, STAMP);
  } catch {
    // A root-owned file, and we are not root: compared again at each start, as it is.
  }
  return true;
}

// Byte for byte against the embedded copy (the one build.mjs hashed) rather than
// by sha256: as strict, and it spares loading node:crypto. Read in small pieces:
// a buffer for the whole file costs more to fault in than the reads.
function holds(fd: number, size: number, bytes: Uint8Array): boolean {
  if (size !== bytes.byteLength) return false;
  const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, size));
  for (let position = 0; position < size; ) {
    const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - position), position);
    // n === 0: shorter than fstat said, so not ours.
    if (n === 0 || !chunk.subarray(0, n).equals(bytes.subarray(position, position + n))) return false;
    position += n;
  }
  return true;
}

// Write aside, then rename: rename is atomic, so a process starting at the same
// moment sees the old file or the whole new one, never a partial one. Synced before
// the rename: the name then never shows a file of bridge's time that a crash left
// with pages missing (isOurs trusts the size and the time).
function writeAside(file: string, bytes: Uint8Array): void {
  const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o700);
    try {
      writeFileSync(fd, bytes);
      futimesSync(fd, STAMP, STAMP);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (cause) {
    throw new Error(`cannot write the SQLite addon to ${file} (${errorMessage(cause)}): ${FIX}`, { cause });
  } finally {
    rmSync(temp, { force: true });
  }
}

function dlopen(file: string, fd: number): object {
  const module = { exports: {} };
  // On Linux, load through our descriptor: the very file just compared, so nothing
  // can be swapped in between. Elsewhere (macOS), by its path: privateDir made sure
  // only we or root can change its directory, so no one else can swap it either.
  const viaFd = `/proc/self/fd/${fd}`;
  const target = process.platform === "linux" && existsSync(viaFd) ? viaFd : file;
  try {
    process.dlopen(module, target);
  } catch (cause) {
    // Typically a cache directory on a noexec mount.
    throw new Error(`cannot load the embedded SQLite addon from ${file} (set XDG_CACHE_HOME to a directory that allows executables, ${EXAMPLE})`, {
      cause,
    });
  }
  return module.exports;
}
