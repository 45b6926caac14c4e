// better-sqlite3 normally require()s its .node addon from node_modules. The
// single executable (dist/bridge) has no node_modules, and a SEA's require()
// only loads builtins, so build.mjs embeds the addon as a SEA asset instead.
// dlopen() can only load a real file, so we copy the asset to a cache directory
// keyed by its hash (a new build never loads a stale addon) and load it there.
import { lstatSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { getRawAsset, isSea } from "node:sea";
import { errorMessage } from "../core/errors.ts";

const ASSET = "better_sqlite3.node";

/** The asset's sha256 in hex, computed by build.mjs (an esbuild define); hashing 2 MB on every start would cost ~5 ms. */
declare const BRIDGE_ADDON_SHA256: string;

let memo: { binding: object | undefined } | undefined;

/**
 * The better-sqlite3 addon to pass as `new Database(file, { nativeBinding })`,
 * or undefined outside the single executable (better-sqlite3 then finds its
 * own prebuild in node_modules).
 */
export function nativeBinding(): object | undefined {
  // A process can dlopen an addon only once, so every caller shares one.
  memo ??= { binding: isSea() ? loadEmbedded() : undefined };
  return memo.binding;
}

function loadEmbedded(): object {
  // The raw asset is a read-only view of the executable's own memory: fine to
  // write out, never to modify.
  const bytes = new Uint8Array(getRawAsset(ASSET));
  const dir = join(cacheRoot(), "bridge", BRIDGE_ADDON_SHA256.slice(0, 16));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new Error(`cannot write the embedded SQLite addon (${errorMessage(cause)}): set XDG_CACHE_HOME to a directory bridge may write`, { cause });
  }
  assertPrivate(dir);
  const file = join(dir, ASSET);

  // The file is trusted without re-hashing it: the directory is named by the
  // content's hash and private to us, and a file only appears in it complete.
  if (sizeOf(file) !== bytes.byteLength) {
    // Write aside, then rename: rename is atomic, so a process starting at the
    // same moment sees either no file or a complete one, never a partial one.
    const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
    try {
      writeFileSync(temp, bytes, { mode: 0o700, flag: "wx" });
      renameSync(temp, file);
    } finally {
      rmSync(temp, { force: true });
    }
  }

  const module = { exports: {} };
  try {
    process.dlopen(module, file);
  } catch (cause) {
    // Typically a cache directory on a noexec mount (e.g. some /tmp setups).
    throw new Error(
      `cannot load the embedded SQLite addon from ${file} (set XDG_CACHE_HOME to a directory that allows executables)`,
      { cause },
    );
  }
  return module.exports;
}

function cacheRoot(): string {
  const { XDG_CACHE_HOME, HOME } = process.env;
  // The XDG spec says to ignore relative paths; HOME is unset under `env -i`
  // and in some service managers.
  if (XDG_CACHE_HOME && isAbsolute(XDG_CACHE_HOME)) return XDG_CACHE_HOME;
  if (HOME) return join(HOME, ".cache");
  return tmpdir();
}

// We are about to execute code from this directory; in a shared location such
// as /tmp, someone else could have created it first and could swap the file
// between our hash check and dlopen().
function assertPrivate(dir: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return; // Windows: no POSIX owner or mode bits.
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0) {
    throw new Error(
      `refusing to load the SQLite addon from ${dir}: it must be a directory owned by uid ${uid} and not writable by others`,
    );
  }
}

function sizeOf(file: string): number | undefined {
  return statSync(file, { throwIfNoEntry: false })?.size; // Missing: (re)write it.
}
