import { execFile } from "node:child_process";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BINARY, e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

let e2e: E2E;
let server: Serve;

beforeAll(async () => {
  e2e = await e2eSetup("backup");
  server = await startServe(e2e.env, e2e.dir);
  e2e.crm.grantLocation("code-backup", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-backup`)).status).toBe(200);
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

/** `bridge backup` under umask 000, where a file made with default modes would be world-readable. */
function backupUnderOpenUmask(file: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile("/bin/sh", ["-c", 'umask 000 && exec "$0" backup "$1"', BINARY, file], { env: e2e.env, cwd: e2e.dir }, (error, stdout, stderr) =>
      done({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe("bridge backup", () => {
  test("copies the database a running serve is writing: consistent, complete, 0600, and it opens", async () => {
    const acknowledged: string[] = [];
    let sending = true;
    let serial = 0;
    const senders = Array.from({ length: 4 }, async () => {
      while (sending) {
        const id = `bk-${++serial}`;
        if ((await e2e.webhook(server.url, outbound(id))).status === 200) acknowledged.push(id);
      }
    });
    await waitFor(() => acknowledged.length >= 200, 30_000);

    const before = [...acknowledged];
    const copy = join(e2e.dir, "copy.db");
    const result = await backupUnderOpenUmask(copy);
    const during = acknowledged.length - before.length;
    sending = false;
    await Promise.all(senders);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^backed up ${e2e.env.DATABASE_PATH} to ${copy} \\(\\d+ bytes, schema version \\d+, mode 0600\\)\\n$`));
    expect(during, "webhooks were acknowledged while the backup ran").toBeGreaterThan(0);
    expect(statSync(copy).mode & 0o777).toBe(0o600);

    // Restored: the CLI opens it as bridge's database.
    const listed = await bridge("--db", copy, "locations", "list", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ locations: [{ location_id: "loc-1" }] });
    const db = new Database(copy, { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const jobs = new Set(db.prepare("SELECT message_id FROM jobs").pluck().all() as string[]);
      expect(before.filter((id) => !jobs.has(id))).toEqual([]);
    } finally {
      db.close();
    }
  });

  test("refuses to overwrite a file unless --force; --json says what it wrote", async () => {
    const file = join(e2e.dir, "existing.db");
    writeFileSync(file, "keep me", { mode: 0o644 });
    const refused = await bridge("backup", file);
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toBe(`bridge: ${file} already exists; not overwriting it (choose another name, or --force)\n`);

    const forced = await bridge("backup", file, "--force", "--json");
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ database: e2e.env.DATABASE_PATH, backup: file, schema_version: expect.any(Number) });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await bridge("--db", file, "locations", "list")).code).toBe(0);
  });

  test("refuses the database itself, a missing database and a missing directory", async () => {
    const self = await bridge("backup", e2e.env.DATABASE_PATH!, "--force");
    expect(self.code).toBe(1);
    expect(self.stderr).toContain("is the database itself");
    const missing = await bridge("--db", join(e2e.dir, "nope.db"), "backup", join(e2e.dir, "x.db"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("database not found");
    const nodir = await bridge("backup", join(e2e.dir, "no", "such", "dir.db"));
    expect(nodir.code).toBe(1);
    expect(nodir.stderr).toBe(`bridge: cannot write ${join(e2e.dir, "no", "such", "dir.db")}: directory ${join(e2e.dir, "no", "such")} does not exist\n`);
    expect((await bridge("backup")).code).toBe(2);
  });

  test("serve keeps running through it all", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    server.child.kill("SIGTERM");
    expect(await exited(server.child)).toBe(0);
  });
});
