import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { assertBuilt, runBridge } from "../helpers/binary.ts";

// Where dist/bridge unpacks its SQLite addon with neither XDG_CACHE_HOME nor HOME set
// (`env -i`, some service managers): beside the database, never in a shared /tmp/bridge.

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
  // Not under os.tmpdir(): there the cache beside the database is refused (next test).
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

const tmpShared = (statSync(tmpdir()).mode & 0o002) !== 0;

test.skipIf(!tmpShared)("with the database in a shared temp directory it refuses, and says what to set", async () => {
  const db = database(tmpdir());
  const { code, stdout, stderr } = await runBridge({}, dir!, ["--db", db, "locations", "list"]);
  expect(code).toBe(1);
  expect(stdout).toBe("");
  expect(stderr).toContain(`refusing to keep the SQLite addon in ${dir}/.cache/bridge/`);
  expect(stderr).toContain(`${tmpdir()} is writable by others`);
  expect(stderr).toContain("set XDG_CACHE_HOME to a private directory");
  // The database is fine: the message says it is the addon that failed, and shows the fix.
  expect(stderr).not.toContain("cannot open database");
  expect(stderr).toMatch(/^bridge: cannot unpack the SQLite addon bridge needs: /);
  expect(stderr).toContain("e.g. `XDG_CACHE_HOME=/var/lib/bridge/.cache bridge ...`");
  expect(existsSync(join(dir!, ".cache"))).toBe(false);
  expect(existsSync(join(tmpdir(), "bridge"))).toBe(false);
});
