import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { loadAddon, privateDir } from "../../src/sea/addon-cache.ts";
import { cacheRoot } from "../../src/sea/addon.ts";

const uid = process.getuid!();
const root = uid === 0;
const SOMEONE = 65534; // nobody
// The prebuild build.mjs embeds: a real addon, so an accepted one is really loaded.
const ADDON = readFileSync(resolve("node_modules/better-sqlite3/prebuilds", `${process.platform}-${process.arch}.node`));

// Not under os.tmpdir(): the tests make directories of every mode, and the home directory
// is private to whoever runs them.
let base: string;
beforeEach(() => {
  base = mkdtempSync(join(homedir(), ".bridge-native-test-"));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

/** A directory under base with exactly `mode` (mkdir's mode is cut by the umask). */
function dir(name: string, mode = 0o700): string {
  const path = join(base, name);
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

describe("cacheRoot", () => {
  test.each<[string, Record<string, string>, string, string]>([
    ["XDG_CACHE_HOME first", { XDG_CACHE_HOME: "/x/cache", HOME: "/home/u" }, "/srv/b/bridge.db", "/x/cache"],
    ["a relative XDG_CACHE_HOME is ignored", { XDG_CACHE_HOME: "x/cache", HOME: "/home/u" }, "/srv/b/bridge.db", "/home/u/.cache"],
    ["then ~/.cache", { HOME: "/home/u" }, "/srv/b/bridge.db", "/home/u/.cache"],
    ["then beside the database", {}, "/srv/b/bridge.db", "/srv/b/.cache"],
    ["a relative HOME is ignored", { HOME: "home" }, "/srv/b/bridge.db", "/srv/b/.cache"],
    ["beside a relative database", {}, "data/bridge.db", resolve("data/.cache")],
  ])("%s", (_, env, db, expected) => {
    expect(cacheRoot(env, db)).toBe(expected);
  });

  test("without XDG_CACHE_HOME and HOME, never os.tmpdir(): beside the database", () => {
    const db = join(base, "bridge.db");
    expect(cacheRoot({}, db)).toBe(join(base, ".cache"));
    expect(cacheRoot({}, db).startsWith(tmpdir())).toBe(false);
  });

  test("an in-memory database has no directory: asks for XDG_CACHE_HOME", () => {
    expect(() => cacheRoot({}, ":memory:")).toThrow(/in-memory database .*set XDG_CACHE_HOME/);
  });

  test.skipIf((statSync(tmpdir()).mode & 0o1002) !== 0o1002)("a database in a private directory under the sticky temp directory: the cache beside it is used", () => {
    const mine = mkdtempSync(join(tmpdir(), "bridge-native-test-"));
    try {
      const cache = join(cacheRoot({}, join(mine, "bridge.db")), "bridge");
      expect(privateDir(cache, uid)).toBe(realpathSync(mine) + "/.cache/bridge");
    } finally {
      rmSync(mine, { recursive: true, force: true });
    }
  });
});

describe("privateDir", () => {
  test("creates what is missing, 0700, and returns the path", () => {
    const path = join(base, "a", "b", "c");
    expect(privateDir(path, uid)).toBe(path);
    for (const made of ["a", "a/b", "a/b/c"]) expect(statSync(join(base, made)).mode & 0o777).toBe(0o700);
  });

  test("accepts a symlink we own into a private directory, and answers its real path", () => {
    const real = dir("real", 0o755);
    symlinkSync(real, join(base, "link"));
    expect(privateDir(join(base, "link", "cache"), uid)).toBe(join(real, "cache"));
  });

  test.each<[string, () => string, string]>([
    ["a group-writable parent", () => dir("g", 0o770), "g is writable by its group (mode 770)"],
    ["a world-writable parent", () => dir("w", 0o777), "w is writable by others (mode 777)"],
    ["a file where a directory should be", () => (writeFileSync(join(base, "f"), ""), join(base, "f")), "f is not a directory"],
    [
      "a symlink we own into a world-writable directory",
      () => (symlinkSync(dir("open", 0o777), join(base, "link")), join(base, "link")),
      "open is writable by others",
    ],
  ])("refuses %s", (_, make, problem) => {
    const parent = make();
    expect(() => privateDir(join(parent, "cache"), uid)).toThrow(`${base}/${problem}`);
  });

  // Only root can give a file away; as root, "us" and root are the same owner.
  test.skipIf(!root).each<[string, () => string]>([
    ["a parent owned by someone else", () => (chownSync(dir("theirs", 0o755), SOMEONE, SOMEONE), join(base, "theirs"))],
    [
      "a symlink owned by someone else",
      () => (symlinkSync(dir("real"), join(base, "link")), lchownSync(join(base, "link"), SOMEONE, SOMEONE), join(base, "link")),
    ],
  ])("refuses %s", (_, make) => {
    const parent = make();
    expect(() => privateDir(join(parent, "cache"), uid)).toThrow(`${parent} is owned by uid ${SOMEONE}`);
  });

  test("a sticky world-writable directory above ours, as /tmp, is accepted: nobody else can replace our entry in it", () => {
    const sticky = dir("t", 0o1777);
    expect(privateDir(join(sticky, "mine", "cache"), uid)).toBe(join(sticky, "mine", "cache"));
  });

  test("the cache directory itself sticky and world-writable is refused: anyone could add files to it", () => {
    const sticky = dir("t", 0o1777);
    expect(() => privateDir(sticky, uid)).toThrow(`${sticky} is writable by others (mode 1777)`);
  });

  test.skipIf(!root)("an entry someone else made first in a sticky directory is refused", () => {
    const sticky = dir("t", 0o1777);
    mkdirSync(join(sticky, "theirs"), { mode: 0o700 });
    chownSync(join(sticky, "theirs"), SOMEONE, SOMEONE);
    expect(() => privateDir(join(sticky, "theirs", "cache"), uid)).toThrow(`${sticky}/theirs is owned by uid ${SOMEONE}`);
  });

  test("an error names the path asked for and what to do", () => {
    const parent = dir("w", 0o777);
    expect(() => privateDir(join(parent, "cache"), uid)).toThrow(
      `refusing to keep the SQLite addon in ${parent}/cache: ${parent} is writable by others (mode 777); ` +
        "set XDG_CACHE_HOME to a private directory",
    );
  });
});

describe("loadAddon", () => {
  let cache: string;
  let file: string;
  beforeEach(() => {
    cache = privateDir(join(base, "cache", "bridge", "0123456789abcdef"), uid);
    file = join(cache, "better_sqlite3.node");
  });

  test("writes the addon into a private tree it made itself, 0700, and loads it", () => {
    const addon = loadAddon(cache, ADDON, uid) as { Database?: unknown };
    expect(typeof addon.Database).toBe("function");
    expect(readFileSync(file).equals(ADDON)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o700);
  });

  test("loads a file that holds the addon as it is", () => {
    writeFileSync(file, ADDON, { mode: 0o500 });
    const { ino } = statSync(file);
    loadAddon(cache, ADDON, uid);
    expect(statSync(file).ino).toBe(ino);
  });

  test("the file it writes, and one it found the same, carry bridge's time: the next start checks size and time alone", () => {
    loadAddon(cache, ADDON, uid);
    expect(statSync(file).mtimeMs).toBe(1_000_000_000_000);
    rmSync(file);
    writeFileSync(file, ADDON, { mode: 0o700 });
    loadAddon(cache, ADDON, uid);
    expect(statSync(file).mtimeMs).toBe(1_000_000_000_000);
  });

  test.each<[string, Buffer]>([
    ["tampered with", Buffer.concat([ADDON.subarray(0, 1000), Buffer.from("evil"), ADDON.subarray(1004)])],
    ["cut short (a crash mid-write)", ADDON.subarray(0, 4096)],
    ["empty", Buffer.alloc(0)],
  ])("a file that differs (%s) is written again before it is loaded", (_, planted) => {
    writeFileSync(file, planted, { mode: 0o700 });
    const addon = loadAddon(cache, ADDON, uid) as { Database?: unknown };
    expect(typeof addon.Database).toBe("function");
    expect(readFileSync(file).equals(ADDON)).toBe(true);
  });

  test.each<[string, () => void, string]>([
    ["a planted symlink", () => symlinkSync(join(base, "elsewhere.node"), file), "is a symbolic link"],
    ["a group-writable file", () => (writeFileSync(file, ADDON), chmodSync(file, 0o720)), "is writable by its group (mode 720)"],
    ["a world-writable file", () => (writeFileSync(file, ADDON), chmodSync(file, 0o706)), "is writable by others (mode 706)"],
    ["a directory", () => mkdirSync(file), "is not a regular file"],
  ])("refuses %s in place of the addon, and leaves it", (_, plant, problem) => {
    writeFileSync(join(base, "elsewhere.node"), ADDON);
    plant();
    expect(() => loadAddon(cache, ADDON, uid)).toThrow(`refusing to load the SQLite addon ${file}: it ${problem}; remove it`);
  });

  test.skipIf(!root)("refuses an addon file owned by someone else", () => {
    writeFileSync(file, ADDON, { mode: 0o700 });
    chownSync(file, SOMEONE, SOMEONE);
    expect(() => loadAddon(cache, ADDON, uid)).toThrow(`it is owned by uid ${SOMEONE}`);
    expect(statSync(file).uid).toBe(SOMEONE);
  });
});
