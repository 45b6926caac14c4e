import { describe, expect, test } from "vitest";
import { describeConfig } from "../../src/core/config-describe.ts";
import { BOTH_DATABASES, loadConfig } from "../../src/core/config.ts";
import { maskDatabaseUrl, withoutPassword } from "../../src/store/postgres/url.ts";
import { ConfigError } from "../../src/errors.ts";

// DATABASE_URL (src/core/config.ts): PostgreSQL instead of SQLite, its password never shown.

const PASSWORD = "s3cret-Pw-7f2a";

function problemOf(url: string): string {
  try {
    loadConfig({ DATABASE_URL: url }, "store");
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.join("\n");
  }
  return "";
}

describe("DATABASE_URL", () => {
  test.each([
    `postgres://bridge:${PASSWORD}@db.example.com:5432/bridge`,
    "postgresql://bridge@127.0.0.1/bridge",
    "postgres://bridge@[::1]:6432/bridge?sslmode=verify-full",
    "postgres:///bridge?host=/var/run/postgresql",
  ])("%s is taken", (url) => {
    expect(loadConfig({ DATABASE_URL: url }, "store").databaseUrl).toBe(url);
  });

  test("unset, every command uses SQLite", () => {
    expect(loadConfig({}, "store").databaseUrl).toBe("");
  });

  test.each([
    ["mysql://bridge@db/bridge", "must be a postgres:// or postgresql:// URL"],
    ["db.example.com:5432", "must be a postgres:// or postgresql:// URL"],
    ["postgres:///bridge", "must name a host"],
    ["postgres://bridge@db/bridge?sslmode=sometimes", "sslmode must be one of"],
  ])("%s is refused: %s", (url, says) => {
    const problem = problemOf(url);
    expect(problem).toContain("DATABASE_URL: ");
    expect(problem).toContain(says);
  });

  test("a refused URL's password is not repeated in the error", () => {
    expect(problemOf(`mysql://bridge:${PASSWORD}@db/bridge`)).not.toContain(PASSWORD);
    expect(problemOf(`postgres://bridge:${PASSWORD}@db/bridge?sslmode=x`)).not.toContain(PASSWORD);
  });

  test("with DATABASE_PATH also set, DATABASE_PATH is ignored with a warning", () => {
    const warnings: string[] = [];
    loadConfig({ DATABASE_URL: "postgres://bridge@db/bridge", DATABASE_PATH: "/var/lib/bridge/bridge.db" }, "store", (m) => warnings.push(m));
    expect(warnings).toEqual([BOTH_DATABASES]);
    expect(BOTH_DATABASES).toContain("DATABASE_PATH is ignored");
  });

  test("no warning for DATABASE_URL alone, nor DATABASE_PATH alone", () => {
    const warnings: string[] = [];
    loadConfig({ DATABASE_URL: "postgres://bridge@db/bridge" }, "store", (m) => warnings.push(m));
    loadConfig({ DATABASE_PATH: "/var/lib/bridge/bridge.db" }, "store", (m) => warnings.push(m));
    expect(warnings).toEqual([]);
  });

  test("serve's logged configuration shows the URL with its password masked", () => {
    const shown = describeConfig(loadConfig({ DATABASE_URL: `postgres://bridge:${PASSWORD}@db:5432/bridge` }, "store"));
    expect(shown.DATABASE_URL).toBe("postgres://bridge:***@db:5432/bridge");
    expect(shown.DATABASE_PATH).toContain("ignored");
    expect(JSON.stringify(shown)).not.toContain(PASSWORD);
  });
});

describe("maskDatabaseUrl", () => {
  test.each([
    [`postgres://bridge:${PASSWORD}@db:5432/bridge`, "postgres://bridge:***@db:5432/bridge"],
    [`postgresql://bridge:${PASSWORD}@db/bridge?sslmode=require`, "postgresql://bridge:***@db/bridge?sslmode=require"],
    [`postgres://bridge@db/bridge?password=${PASSWORD}&sslmode=require`, "postgres://bridge@db/bridge?password=***&sslmode=require"],
    ["postgres://bridge@db/bridge", "postgres://bridge@db/bridge"],
    ["postgres://db/bridge", "postgres://db/bridge"],
    // An @ left unencoded in the password: the host is after the last one, as URL parsers read it.
    ["postgres://bridge:Tr0ub4dor@horse99@db/bridge", "postgres://bridge:***@db/bridge"],
  ])("%s -> %s", (url, masked) => {
    expect(maskDatabaseUrl(url)).toBe(masked);
  });

  test("a driver's error quoting the password, or the whole URL, is said without it", () => {
    const url = `postgres://bridge:${encodeURIComponent("p@ss/word")}@db/bridge`;
    const said = withoutPassword(`cannot use ${url}: password "p@ss/word" refused`, url);
    expect(said).not.toContain("p@ss/word");
    expect(said).not.toContain(encodeURIComponent("p@ss/word"));
    expect(said).toContain("postgres://bridge:***@db/bridge");
  });
});

describe("withoutPassword, a short password", () => {
  test("is masked where it stands as the password, and words that hold it are left as they are", () => {
    const url = "postgres://bridge:bridge@db/bridge";
    expect(withoutPassword("the database has no bridge schema yet", url)).toBe("the database has no bridge schema yet");
    expect(withoutPassword("cannot use bridge:bridge@db or password=bridge", url)).toBe("cannot use bridge:***@db or password=***");
  });
});
