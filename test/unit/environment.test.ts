import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { envFileProblem, exposedSecrets } from "../../src/cli/env-file.ts";
import { CONFIG_VARIABLES } from "../../src/cli/environment.ts";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { describeConfig } from "../../src/core/config-describe.ts";
import { loadConfig } from "../../src/core/config.ts";
import { CONFIGURATION_PAGE, withConfigurationTable } from "../../scripts/docs.ts";

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

test("docs/configuration.md's table is what `npm run docs` writes from VARIABLES", () => {
  const page = readFileSync(CONFIGURATION_PAGE, "utf8");
  expect(page, "run `npm run docs`").toBe(withConfigurationTable(page));
});

test("docs/configuration.md's table lists exactly these variables, with the same defaults", () => {
  const page = readFileSync(CONFIGURATION_PAGE, "utf8");
  const rows = page.split("\n").filter((line) => /^\| `[A-Z_]+`/.test(line));
  const documented = new Map<string, string>();
  for (const row of rows) {
    const [names = "", fallback = ""] = row.split("|").slice(1, 3);
    for (const [, name] of names.matchAll(/`([A-Z_]+)`/g)) documented.set(name!, fallback.trim());
  }
  expect([...documented.keys()].sort()).toEqual(CONFIG_VARIABLES.map((v) => v.name).sort());
  for (const { name, default: fallback } of CONFIG_VARIABLES) {
    // A literal default is shown as code in the table; a described one ("HighLevel's own") in words.
    if (fallback && /^[\w.:/,-]+$/.test(fallback)) expect(documented.get(name), name).toBe(`\`${fallback}\``);
    else expect(documented.get(name), name).toBe(fallback ?? "empty");
  }
});

test.each<{ uid: number; mode: number; me: number | undefined; refused: RegExp | undefined }>([
  { uid: 1000, mode: 0o100600, me: 1000, refused: undefined },
  { uid: 1000, mode: 0o100644, me: 1000, refused: undefined },
  { uid: 0, mode: 0o100640, me: 1000, refused: undefined }, // root's: only root could have planted it
  { uid: 0, mode: 0o100600, me: 0, refused: undefined },
  { uid: 65534, mode: 0o100600, me: 1000, refused: /^refusing \.\/\.env: it belongs to uid 65534, not to you \(uid 1000\) or root, .*chown "\$\(id -u\)" \.\/\.env\); otherwise remove it, or set the variables in the environment, or name a file of yours with --env-file$/ },
  { uid: 65534, mode: 0o100600, me: 0, refused: /belongs to uid 65534, not to you \(uid 0\) or root/ }, // root too refuses another's file
  { uid: 1000, mode: 0o100664, me: 1000, refused: /^refusing \.\/\.env: it is writable by group or others \(mode 0664\), .*Run chmod go-w \.\/\.env, or set the variables in the environment/ },
  { uid: 1000, mode: 0o100602, me: 1000, refused: /writable by group or others \(mode 0602\)/ },
  { uid: 0, mode: 0o100666, me: 1000, refused: /writable by group or others \(mode 0666\)/ },
  { uid: 65534, mode: 0o100666, me: undefined, refused: undefined }, // no owners to check (Windows)
])("./.env of uid $uid, mode $mode, read by uid $me: refused $refused", ({ uid, mode, me, refused }) => {
  const problem = envFileProblem("./.env", { uid, mode }, me);
  if (refused) expect(problem).toMatch(refused);
  else expect(problem).toBeUndefined();
});

test.skipIf(process.geteuid?.() !== 0)("./.env is read only when it is ours or root's and nobody else may write it; --env-file as named", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-dotenv-"));
  const file = join(dir, ".env");
  writeFileSync(file, "BASE_URL=https://bridge.example.com\nCRM_CLIENT_ID=0123456789abcdef01234567-x\n", { mode: 0o600 });
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const installUrl = async (...globals: string[]) => {
      let out = "";
      let err = "";
      const code = await run([...globals, "install-url"], { out: (t) => (out += t), err: (t) => (err += t), env: {} });
      return { code, out, err };
    };
    expect(await installUrl()).toMatchObject({ code: 0, out: expect.stringContaining("0123456789abcdef01234567") });

    chownSync(file, 65534, 65534); // planted by another user (nobody)
    expect(await installUrl()).toEqual({
      code: 1,
      out: "",
      err: expect.stringMatching(/^bridge: refusing \.\/\.env: it belongs to uid 65534, not to you \(uid 0\) or root/),
    });
    // Named on purpose, it is read.
    expect(await installUrl("--env-file", file)).toMatchObject({ code: 0, out: expect.stringContaining("0123456789abcdef01234567") });

    chownSync(file, 0, 0);
    chmodSync(file, 0o664);
    expect(await installUrl()).toEqual({ code: 1, out: "", err: expect.stringMatching(/^bridge: refusing \.\/\.env: it is writable by group or others \(mode 0664\)/) });
    chmodSync(file, 0o644);
    expect((await installUrl()).code).toBe(0);
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.each<{ mode: number; vars: Record<string, string>; warned: RegExp | undefined }>([
  { mode: 0o100644, vars: { CRM_CLIENT_SECRET: "s3cret" }, warned: /^\.\/\.env holds CRM_CLIENT_SECRET and other users may read it \(mode 0644\): run chmod 600 \.\/\.env$/ },
  { mode: 0o100640, vars: { SMS_API_KEY: "k", INBOUND_API_KEY: "a".repeat(24) }, warned: /holds SMS_API_KEY, INBOUND_API_KEY and other users may read it \(mode 0640\)/ },
  { mode: 0o100604, vars: { BRIDGE_ENCRYPTION_KEY: "0".repeat(64) }, warned: /holds BRIDGE_ENCRYPTION_KEY/ },
  { mode: 0o100600, vars: { CRM_CLIENT_SECRET: "s3cret" }, warned: undefined }, // private
  { mode: 0o100644, vars: { BASE_URL: "https://bridge.example.com", CRM_CLIENT_SECRET: "" }, warned: undefined }, // no secret set
])("an env file of mode $mode holding $vars: warned $warned", ({ mode, vars, warned }) => {
  const warning = exposedSecrets("./.env", mode, vars);
  if (warned) expect(warning).toMatch(warned);
  else expect(warning).toBeUndefined();
});
