import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { assertBuilt, runBridge } from "../helpers/binary.ts";

// Where dist/bridge unpacks its SQLite addon with neither XDG_CACHE_HOME nor HOME set
// (`env -i`, some service managers): beside the database, never in a shared /tmp/bridge; and
// where it refuses to.

let dir: string | undefined;

beforeAll(assertBuilt);
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A bridge database in a new directory under `parent`. */
function database(parent: string): string {
  dir = mkdtempSync(join(parent, "bridge-addon-"));
  const path = join(dir, "bridge.db");
  openDb(path).close();
  return path;
}

test("with an empty environment the addon goes beside the database, 0700", async () => {
  const db = database(homedir());
  const { code, stderr } = await runBridge({}, dir!, ["--db", db, "locations", "list"]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  const [hash, ...more] = readdirSync(join(dir!, ".cache", "bridge"));
  expect(more).toEqual([]);
  const addon = join(dir!, ".cache", "bridge", hash!, "better_sqlite3.node");
  expect(statSync(addon).mode & 0o777).toBe(0o700);
  for (const made of [".cache", ".cache/bridge", `.cache/bridge/${hash}`]) expect(statSync(join(dir!, made)).mode & 0o777).toBe(0o700);
});

const tmpSticky = (statSync(tmpdir()).mode & 0o1002) === 0o1002;

test.skipIf(!tmpSticky)("with the database in a directory of ours under the sticky temp directory, the addon goes beside it", async () => {
  // A clone under /tmp run with `npm start`: nobody else can replace our directory in /tmp.
  const db = database(tmpdir());
  const { code, stderr } = await runBridge({}, dir!, ["--db", db, "locations", "list"]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(readdirSync(join(dir!, ".cache", "bridge"))).toHaveLength(1);
  expect(existsSync(join(tmpdir(), "bridge"))).toBe(false);
});

test("an XDG_CACHE_HOME below a directory others may write (not sticky) is refused, saying what to set", async () => {
  const db = database(homedir());
  const open = join(dir!, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const { code, stdout, stderr } = await runBridge({ XDG_CACHE_HOME: join(open, "cache") }, dir!, ["--db", db, "locations", "list"]);
  expect(code).toBe(1);
  expect(stdout).toBe("");
  expect(stderr).toContain(`refusing to keep the SQLite addon in ${open}/cache/bridge/`);
  expect(stderr).toContain(`${open} is writable by others (mode 777)`);
  expect(stderr).toContain("set XDG_CACHE_HOME to a private directory");
  // The database is fine: the message says it is the addon that failed, and shows the fix.
  expect(stderr).not.toContain("cannot open database");
  expect(stderr).toMatch(/^bridge: cannot unpack the SQLite addon bridge needs: /);
  expect(stderr).toContain("e.g. `XDG_CACHE_HOME=/var/lib/bridge/.cache bridge ...`");
  expect(existsSync(join(open, "cache"))).toBe(false);
});
