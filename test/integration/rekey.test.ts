import { randomBytes } from "node:crypto";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { createCompanyStore } from "../../src/db/companies.ts";
import { lockDb } from "../../src/db/lock.ts";
import { SEALED_COLUMNS } from "../../src/db/rekey.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { useTempDb } from "../helpers/db.ts";
import { sealV1 } from "../helpers/sealer.ts";

const OLD = randomBytes(32);
const NEW = randomBytes(32);
const t = useTempDb("bridge-rekey-");

/** The secrets as stored, every sealed column of every row. */
function stored(): Record<string, string>[] {
  return SEALED_COLUMNS.flatMap(({ table, row, columns }) =>
    t.db.prepare<[], Record<string, string>>(`SELECT ${[row, ...columns].join(", ")} FROM ${table} ORDER BY ${row}`).all(),
  );
}

function cli(env: Record<string, string>, stdin: string | undefined, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), env: { DATABASE_PATH: t.path, ...env } };
  if (stdin !== undefined) io.readLine = async () => stdin;
  return run(argv, io).then((code) => ({ code, out: out.join(""), err: err.join("") }));
}

function seed(key: Buffer | undefined) {
  const tokens = createLocationRegistry(t.db, createSealer(key));
  for (const id of ["loc-1", "loc-2"]) {
    tokens.save({ locationId: id, companyId: "c", accessToken: `at-${id}`, refreshToken: `rt-${id}`, expiresAt: 1 }, 1, true);
  }
  tokens.setConfig("loc-1", { smsApiKey: "sms-key-loc-1" }, 1);
}

const PLAIN = {
  "loc-1": { accessToken: "at-loc-1", refreshToken: "rt-loc-1", smsApiKey: "sms-key-loc-1" },
  "loc-2": { accessToken: "at-loc-2", refreshToken: "rt-loc-2", smsApiKey: "" },
};

function readAll(key: Buffer | undefined) {
  const tokens = createLocationRegistry(t.db, createSealer(key));
  return Object.fromEntries(tokens.list().map((r) => [r.locationId, { accessToken: r.accessToken, refreshToken: r.refreshToken, smsApiKey: r.smsApiKey }]));
}

describe("bridge rekey", () => {
  beforeEach(() => seed(OLD));

  test("--new-key -: every secret opens with the new key and no longer with the old", async () => {
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result).toMatchObject({ code: 0, err: "" });
    expect(result.out).toContain("re-encrypted 5 secret(s) under the new key");
    expect(result.out).toContain("set BRIDGE_ENCRYPTION_KEY to the new key in the env file");
    expect(result.out).not.toContain(NEW.toString("hex"));
    expect(readAll(NEW)).toEqual(PLAIN);
    expect(() => readAll(OLD)).toThrow("tokens.access_token of loc-1: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with");
    for (const row of stored()) for (const value of [row.access_token, row.refresh_token]) expect(value).toMatch(/^enc:v2:/);
  });

  test("agencies' company tokens are sealed again too", async () => {
    createCompanyStore(t.db, createSealer(OLD)).save({ companyId: "co-1", accessToken: "at-co-1", refreshToken: "rt-co-1", expiresAt: 1 }, 1);
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result).toMatchObject({ code: 0, err: "" });
    expect(result.out).toContain("re-encrypted 7 secret(s) under the new key");
    expect(createCompanyStore(t.db, createSealer(NEW)).get("co-1")).toMatchObject({ accessToken: "at-co-1", refreshToken: "rt-co-1" });
    expect(() => createCompanyStore(t.db, createSealer(OLD)).get("co-1")).toThrow();
  });

  test("a wrong current key changes nothing", async () => {
    const before = stored();
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: randomBytes(32).toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      "tokens.access_token of loc-1: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with (neither the current key nor the new one opens it); nothing was changed",
    );
    expect(stored()).toEqual(before);
    expect(readAll(OLD)).toEqual(PLAIN);
  });

  test("no current key while secrets are sealed changes nothing", async () => {
    const before = stored();
    const result = await cli({}, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result.code).toBe(1);
    expect(result.err).toContain("set BRIDGE_ENCRYPTION_KEY");
    expect(stored()).toEqual(before);
  });

  test("--new-key-file, then --decrypt back to plain", async () => {
    const file = join(t.dir, "new.key");
    writeFileSync(file, `${NEW.toString("base64")}\n`, { mode: 0o600 });
    expect((await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, undefined, "rekey", "--new-key-file", file)).code).toBe(0);
    expect(readAll(NEW)).toEqual(PLAIN);

    const plain = await cli({ BRIDGE_ENCRYPTION_KEY: NEW.toString("hex") }, undefined, "rekey", "--decrypt", "--json");
    expect(plain).toMatchObject({ code: 0, out: `${JSON.stringify({ secrets: 5, encrypted: false }, null, 2)}\n` });
    expect(readAll(undefined)).toEqual(PLAIN);
    expect(stored()[0]).toMatchObject({ access_token: "at-loc-1", sms_api_key: "sms-key-loc-1" });
  });

  test.each([
    [[], undefined, "exactly one of"],
    [["--new-key", "-", "--decrypt"], "x", "exactly one of"],
    [["--new-key", "00".repeat(32)], undefined, "--new-key takes only"],
    [["--new-key", "-"], "not-a-key", "the new key must be 32 bytes"],
    [["--new-key", "-"], "", "no key on standard input"],
    [["--new-key", "-"], undefined, "no standard input"],
  ])("rekey %j is a usage error (%s), nothing changed", async (args, stdin, message) => {
    const before = stored();
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, stdin, "rekey", ...args);
    expect(result.code).toBe(2);
    expect(result.err).toContain(message);
    expect(stored()).toEqual(before);
  });

  test("a missing key file is a failure naming it", async () => {
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, undefined, "rekey", "--new-key-file", join(t.dir, "nope"));
    expect(result).toMatchObject({ code: 1, err: `bridge: cannot read the new key from ${join(t.dir, "nope")}: ENOENT\n` });
  });

  test("refused while serve holds the database's lock, with what to do; done once it is released", async () => {
    const before = stored();
    const serve = lockDb(t.path, "serve"); // as a running `bridge serve` holds it
    try {
      const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
      expect(result.code).toBe(1);
      expect(result.err).toContain(`${t.path} is in use by bridge serve (pid ${process.pid}, since `);
      expect(result.err).toContain(`which holds ${t.path}.lock: stop bridge serve first (systemctl stop bridge), then run this again`);
      expect(stored()).toEqual(before);
    } finally {
      serve.release();
    }
    expect((await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-")).code).toBe(0);
    expect(readAll(NEW)).toEqual(PLAIN);
  });

  test("a serve started through a symlink to the database holds the same lock", async () => {
    const link = join(t.dir, "link.db");
    symlinkSync(t.path, link);
    const serve = lockDb(link, "serve");
    try {
      const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
      expect(result.code).toBe(1);
      expect(result.err).toContain(`which holds ${t.path}.lock: stop bridge serve first`);
    } finally {
      serve.release();
    }
  });

  test("a file some of whose values are already under the new key is finished: those stay, the others move", async () => {
    // As a CLI command run with the new key leaves it, or a server that kept the old key after a rekey.
    createLocationRegistry(t.db, createSealer(NEW)).setConfig("loc-2", { smsApiKey: "sms-key-loc-2" }, 1);
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result).toMatchObject({ code: 0, err: "" });
    expect(readAll(NEW)).toEqual({ ...PLAIN, "loc-2": { ...PLAIN["loc-2"], smsApiKey: "sms-key-loc-2" } });
  });

  test("a value neither key opens is named, and nothing is changed", async () => {
    createLocationRegistry(t.db, createSealer(randomBytes(32))).setConfig("loc-2", { smsApiKey: "sms-key-loc-2" }, 1);
    const before = stored();
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-");
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      "tokens.sms_api_key of loc-2: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with (neither the current key nor the new one opens it); nothing was changed",
    );
    expect(stored()).toEqual(before);
  });

  test("the same key again is refused", async () => {
    const result = await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, OLD.toString("hex"), "rekey", "--new-key", "-");
    expect(result.code).toBe(1);
    expect(result.err).toContain("nothing to do");
  });
});

test("values stored plain, or sealed by an older bridge (enc:v1), are sealed under the new key", async () => {
  seed(undefined);
  t.db.prepare("UPDATE tokens SET refresh_token = ? WHERE location_id = 'loc-2'").run(sealV1("rt-loc-2", OLD));
  expect((await cli({ BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, NEW.toString("hex"), "rekey", "--new-key", "-")).code).toBe(0);
  expect(readAll(NEW)).toEqual(PLAIN);
  for (const row of stored()) expect(row.refresh_token).toMatch(/^enc:v2:/);
});
