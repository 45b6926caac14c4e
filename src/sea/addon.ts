// better-sqlite3 normally require()s its .node addon from node_modules. The
// single executable (dist/bridge) has no node_modules, and a SEA's require()
// only loads builtins, so build.mjs embeds the addon as a SEA asset instead.
// dlopen() can only load a real file, so we copy the asset to a cache directory
// keyed by its hash (a new build never loads a stale addon) and load it there.
// The cache itself, and why it is safe to load from, is src/sea/addon-cache.ts.
import { dirname, isAbsolute, join, resolve } from "node:path";
import { getRawAsset, isSea } from "node:sea";
import { errorMessage } from "../errors.ts";
import { ASSET, FIX, loadAddon, privateDir } from "./addon-cache.ts";

/**
 * The addon could not be unpacked or loaded. Its own class so that openDb passes it on
 * as it is: the database itself was never touched, and "cannot open database" would
 * send the operator to look at the wrong file.
 */
export class AddonError extends Error {
  constructor(cause: unknown) {
    super(`cannot unpack the SQLite addon bridge needs: ${errorMessage(cause)}`, { cause });
    this.name = "AddonError";
  }
}

/** The asset's sha256 in hex, computed by build.mjs (an esbuild define). */
declare const BRIDGE_ADDON_SHA256: string;

let memo: { binding: object | undefined } | undefined;

/**
 * The better-sqlite3 addon to pass as `new Database(file, { nativeBinding })`,
 * or undefined outside the single executable (better-sqlite3 then finds its
 * own prebuild in node_modules). `dbPath`: the database about to be opened, the
 * cache's last resort (see cacheRoot).
 */
export function nativeBinding(dbPath: string): object | undefined {
  // A process can dlopen an addon only once, so every caller shares one.
  try {
    memo ??= { binding: isSea() ? loadEmbedded(dbPath) : undefined };
  } catch (error) {
    throw new AddonError(error);
  }
  return memo.binding;
}

/**
 * The directory under which bridge caches its addon: XDG_CACHE_HOME, else ~/.cache,
 * else `.cache` beside the database (the service's home and state directory are
 * usually that directory anyway). Never os.tmpdir(): anyone may create entries there.
 */
export function cacheRoot(env: Record<string, string | undefined>, dbPath: string): string {
  const { XDG_CACHE_HOME, HOME } = env;
  // The XDG spec says to ignore relative paths; HOME is unset under `env -i` and in some service managers.
  if (XDG_CACHE_HOME && isAbsolute(XDG_CACHE_HOME)) return XDG_CACHE_HOME;
  if (HOME && isAbsolute(HOME)) return join(HOME, ".cache");
  if (dbPath === ":memory:" || dbPath === "") {
    throw new Error(`an in-memory database has no directory to keep the SQLite addon beside: ${FIX}`);
  }
  return join(dirname(resolve(dbPath)), ".cache");
}

function loadEmbedded(dbPath: string): object {
  const uid = process.getuid?.();
  // build.mjs builds for Linux and macOS only.
  if (uid === undefined) throw new Error("the single executable needs POSIX file owners to keep its SQLite addon private");
  const dir = privateDir(join(cacheRoot(process.env, dbPath), "bridge", BRIDGE_ADDON_SHA256.slice(0, 16)), uid);
  // The raw asset is a read-only view of the executable's own memory: fine to
  // read and write out, never to modify.
  return loadAddon(dir, new Uint8Array(getRawAsset(ASSET)), uid);
}
