import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { CONFIG_VARIABLES } from "../../src/cli/environment.ts";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { describeConfig, loadConfig } from "../../src/core/config.ts";

/** The names loadConfig reads for `need`, found by watching it read them. */
function namesRead(need: "serve" | "store"): string[] {
  const read = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get: (_target, name) => {
      if (typeof name === "string") read.add(name);
      return undefined;
    },
  });
  try {
    loadConfig(env, need);
  } catch {
    // Required variables are missing: what matters is what was read.
  }
  return [...read].sort();
}

async function help(...argv: string[]): Promise<string> {
  const out: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => out.push(t), env: {} };
  expect(await run([...argv, "--help"], io)).toBe(0);
  return out.join("");
}

test("what serve logs at start names every variable, and the help lists every one", () => {
  const env = { BASE_URL: "https://bridge.example.com", CRM_CLIENT_ID: "0123456789abcdef01234567-x", CRM_CLIENT_SECRET: "s" };
  const described = Object.keys(describeConfig(loadConfig(env, "serve"))).sort();
  expect(described).toEqual(namesRead("serve"));
  expect(CONFIG_VARIABLES.map((v) => v.name).sort()).toEqual(described);
});

test("`bridge serve --help` names every variable serve reads, each on its own line with what it does", async () => {
  const text = await help("serve");
  for (const name of [...namesRead("serve"), "XDG_CACHE_HOME", "UV_THREADPOOL_SIZE", "JOURNAL_STREAM"]) {
    expect(text).toMatch(new RegExp(`^  ${name} +\\S`, "m"));
  }
  expect(text).toMatch(/^  SMS_MAX_PARTS +a message of more parts is refused \(default: 10\)$/m);
  expect(text).toContain("SIGHUP");
});

test("`bridge --help` lists the configuration too", async () => {
  const text = await help();
  for (const name of namesRead("serve")) expect(text).toMatch(new RegExp(`^  ${name} +\\S`, "m"));
  expect(text).toContain("Exit codes: 0 success, 1 failure, 2 usage error.");
});

test("the README's configuration table lists exactly these variables, with the same defaults", () => {
  const readme = readFileSync("README.md", "utf8");
  const table = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("## HighLevel app settings"));
  const rows = table.split("\n").filter((line) => /^\| `[A-Z_]+`/.test(line));
  const documented = new Map<string, string>();
  for (const row of rows) {
    const [names = "", fallback = ""] = row.split("|").slice(1, 3);
    for (const [, name] of names.matchAll(/`([A-Z_]+)`/g)) documented.set(name!, fallback.trim());
  }
  expect([...documented.keys()].sort()).toEqual(CONFIG_VARIABLES.map((v) => v.name).sort());
  for (const { name, default: fallback } of CONFIG_VARIABLES) {
    // A literal default is shown as code in the table; a described one ("HighLevel's own") in words.
    if (fallback && /^[\w.:/,-]+$/.test(fallback)) expect(documented.get(name), name).toContain(`\`${fallback}\``);
  }
});
