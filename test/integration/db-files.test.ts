import { chmodSync, chownSync, closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import { openDb, type Db } from "../../src/db/index.ts";

// Real files, real modes and owners. Giving a file to another user needs root (as the tests run here).
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

let dir: string;
let path: string;
const opened: Db[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "bridge-files-"));
  path = join(dir, "bridge.db");
});
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  rmSync(dir, { recursive: true, force: true });
});

const mode = (file: string) => statSync(file).mode & 0o777;
const FILES = ["", "-wal", "-shm"];

/** A bridge database left with its -wal and -shm, as while another process has it open. */
function bridgeDbInUse(): void {
  opened.push(openDb(path));
  expect(FILES.every((suffix) => existsSync(path + suffix))).toBe(true);
}

describe("files of ours that other users may read or write", () => {
  test("a database pre-created 0666 (and the -wal and -shm SQLite gives its mode) is made 0600, and said", () => {
    closeSync(openSync(path, "w"));
    chmodSync(path, 0o666); // as `touch` under umask 0 would leave it
    const warnings: string[] = [];
    opened.push(openDb(path, { warn: (message) => warnings.push(message) }));
    for (const suffix of FILES) expect(mode(path + suffix), path + suffix).toBe(0o600);
    expect(warnings).toContain(`${path} was mode 0666, open to other users: changed to 0600`);
  });

  test.each(["0666", "0644", "0640", "0604"])("an open bridge database whose files are mode %s: all three are made 0600", (octal) => {
    const loose = Number.parseInt(octal, 8);
    bridgeDbInUse();
    for (const suffix of FILES) chmodSync(path + suffix, loose);
    const warnings: string[] = [];
    opened.push(openDb(path, { existing: true, warn: (message) => warnings.push(message) }));
    for (const suffix of FILES) expect(mode(path + suffix), path + suffix).toBe(0o600);
    expect(warnings).toEqual(FILES.map((suffix) => `${path}${suffix} was mode ${octal}, open to other users: changed to 0600`));
  });

  test("a CLI command says on stderr what it changed, and goes on", async () => {
    bridgeDbInUse();
    chmodSync(path, 0o644);
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(["--db", path, "locations", "list", "--json"], { out: (t) => out.push(t), err: (t) => err.push(t), env: {} });
    expect(code).toBe(0);
    expect(err.join("")).toBe(`bridge: ${path} was mode 0644, open to other users: changed to 0600\n`);
    expect(JSON.parse(out.join(""))).toEqual({ locations: [] });
    expect(mode(path)).toBe(0o600);
  });

  test("another program's database keeps its mode: it is refused before anything changes", () => {
    writeFileSync(path, "not sqlite at all, but not empty either");
    chmodSync(path, 0o644);
    expect(() => openDb(path, { existing: true })).toThrow(`cannot open database ${path}`);
    expect(mode(path)).toBe(0o644);
  });

  test("another program's database in WAL mode is refused with its file and its WAL as they were", () => {
    const other = join(dir, "other.sqlite");
    const writer = new Database(other);
    writer.pragma("journal_mode = WAL");
    writer.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('someone')");
    // As that program leaves them when it stops without closing: its table only in the WAL yet.
    for (const suffix of ["", "-wal"]) copyFileSync(other + suffix, path + suffix);
    writer.close();
    const before = ["", "-wal"].map((suffix) => readFileSync(path + suffix));

    expect(() => openDb(path, { existing: true })).toThrow(`cannot open database ${path}: not a bridge database (it holds other tables: users)`);
    expect(["", "-wal"].map((suffix) => readFileSync(path + suffix))).toEqual(before);
  });
});

describe.skipIf(!asRoot)("files of another user", () => {
  test.each([["the database", ""], ["its -wal", "-wal"], ["its -shm", "-shm"]])("%s owned by another user: refused, and left untouched", (_, suffix) => {
    bridgeDbInUse();
    const file = path + suffix;
    chmodSync(file, 0o666);
    chownSync(file, NOBODY, NOBODY);
    const before = readFileSync(file);

    expect(() => openDb(path, { existing: true })).toThrow(
      `cannot open database ${path}: ${file} is owned by uid ${NOBODY}, not by uid 0 running bridge (mode 0666): ` +
        "another user may read it or have planted it. Run bridge as its owner, or chown it to uid 0 and chmod 600 it; remove it if it is not bridge's",
    );
    expect(statSync(file)).toMatchObject({ uid: NOBODY, gid: NOBODY });
    expect(mode(file)).toBe(0o666);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  test("a -wal planted before the database is made is refused, and no database is made", () => {
    writeFileSync(`${path}-wal`, "");
    chownSync(`${path}-wal`, NOBODY, NOBODY);
    expect(() => openDb(path)).toThrow(`${path}-wal is owned by uid ${NOBODY}`);
    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}-shm`)).toBe(false);
  });
});

describe("the directory", () => {
  test("one every user may write, without the sticky bit, is refused: anyone could replace the database", () => {
    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const file = join(open, "bridge.db");
    expect(() => openDb(file)).toThrow(
      `cannot open database ${file}: directory ${open} is writable by every user and not sticky (mode 0777): ` +
        "anyone could replace the database; chmod o-w it, or keep the database elsewhere",
    );
    expect(existsSync(file)).toBe(false);
  });

  test("with the sticky bit (like /tmp) it is accepted: others cannot replace our files there", () => {
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    opened.push(openDb(join(shared, "bridge.db")));
    expect(mode(join(shared, "bridge.db"))).toBe(0o600);
  });
});
