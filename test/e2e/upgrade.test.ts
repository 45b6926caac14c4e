import { copyFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { e2eSetup, exited, runBridge, startServe, type E2E } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

/** The schema one migration short of this bridge's, as the previous release left it. */
const OLD = MIGRATIONS.length - 1;
const NOW = MIGRATIONS.length;

let e2e: E2E;

beforeAll(async () => {
  e2e = await e2eSetup("upgrade");
});

afterAll(async () => {
  await e2e?.close();
});

/** A database an older bridge made at schema version `version`, with a location and a job. */
function oldDatabase(name: string, version = OLD): string {
  const path = join(e2e.dir, name);
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  for (const sql of MIGRATIONS.slice(0, version)) db.exec(sql);
  db.pragma(`user_version = ${version}`);
  db.prepare(
    "INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ('loc-old', 'company-1', 'at', 'rt', ?, 1, 1)",
  ).run(Date.now() + 86_400_000);
  db.prepare("INSERT INTO jobs (message_id, location_id, payload, state, next_attempt_at, created_at, updated_at) VALUES ('m-old', 'loc-old', '{}', 'done', 1, 1, 1)").run();
  db.close();
  return path;
}

function nonEmpty<T>(list: T[]): T[] | undefined {
  return list.length > 0 ? list : undefined;
}

function version(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.pragma("user_version", { simple: true }) as number;
  } finally {
    db.close();
  }
}

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

describe("upgrading the database", () => {
  test("locations list refuses an older schema, says what to do, and changes nothing", async () => {
    const path = oldDatabase("refused.db");
    const { code, stdout, stderr } = await bridge("--db", path, "locations", "list");
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(
      `bridge: database ${path} is at schema version ${OLD}; this bridge needs ${NOW}: stop bridge serve, then run \`bridge migrate\` ` +
        "(a backup is written first), or start the new bridge serve\n",
    );
    expect(version(path)).toBe(OLD);
    expect(existsSync(`${path}.backup-v${OLD}`)).toBe(false);
  });

  test("doctor names an older schema as a fail, and changes nothing", async () => {
    const path = oldDatabase("doctor.db");
    const { code, stdout } = await bridge("--db", path, "doctor");
    expect(code).toBe(1);
    expect(stdout).toContain(`fail  database schema: at schema version ${OLD}; this bridge needs ${NOW}: stop bridge serve, then run \`bridge migrate\``);
    expect(version(path)).toBe(OLD);
  });

  test("serve migrates an older schema after a 0600 backup that opens at the old version", async () => {
    const path = oldDatabase("served.db");
    const server = await startServe({ ...e2e.env, DATABASE_PATH: path }, e2e.dir);
    try {
      const backup = `${path}.backup-v${OLD}`;
      expect(server.log).toContain(`database ${path} is at schema version ${OLD}: backed up to ${backup} (mode 0600) before migrating to ${NOW}`);
      expect(statSync(backup).mode & 0o777).toBe(0o600);
      expect(version(backup)).toBe(OLD);
      expect(version(path)).toBe(NOW);
      const listed = await bridge("--db", path, "locations", "list", "--json");
      expect(listed.code).toBe(0);
      expect(JSON.parse(listed.stdout)).toMatchObject({ locations: [{ location_id: "loc-old" }] });
      // The backup is the older bridge's database as it was: its rows, its schema.
      const copy = new Database(backup, { readonly: true });
      expect(copy.prepare("SELECT message_id FROM jobs").pluck().all()).toEqual(["m-old"]);
      copy.close();
    } finally {
      server.child.kill("SIGTERM");
      await exited(server.child);
    }
  });

  test("a stranger's location stored before approvals existed: serve names it, and its text does not go on the operator's key", async () => {
    const path = oldDatabase("stranger.db", 1);
    const db = new Database(path);
    db.prepare(
      "INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ('loc-stranger', 'stranger-co', 'at', 'rt', ?, 1, 1)",
    ).run(Date.now() + 86_400_000);
    db.close();
    const server = await startServe({ ...e2e.env, DATABASE_PATH: path, SMS_SENDER_ID: "OPERATOR" }, e2e.dir);
    try {
      // Logged just after the "listening on" line startServe waits for.
      const warning = "[warn] 1 approved location(s) of companies not in ALLOWED_COMPANY_IDS: loc-stranger (company stranger-co); they may not use SMS_API_KEY or SMS_SENDER_ID";
      await waitFor(() => server.log.includes(warning));
      const res = await e2e.webhook(server.url, outbound("m-phish", { locationId: "loc-stranger", message: "Your account is locked: http://phish.example" }));
      expect(res.status).toBe(200);
      const [report] = await waitFor(() => nonEmpty(e2e.crm.statusReports().filter((r) => r.messageId === "m-phish")));
      expect(report?.body).toMatchObject({
        status: "failed",
        error: { message: "location loc-stranger belongs to company stranger-co, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key" },
      });
      expect(e2e.gateway.sent().filter((m) => m.message.includes("phish"))).toEqual([]);
    } finally {
      server.child.kill("SIGTERM");
      await exited(server.child);
    }
  });

  test("without ALLOWED_COMPANY_IDS, the locations the upgrade approved wait for the operator: serve, doctor and status name them with the command, and a stranger's text does not go", async () => {
    const path = oldDatabase("unconfirmed.db", 1);
    const db = new Database(path);
    db.prepare(
      "INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ('loc-stranger', 'stranger-co', 'at', 'rt', ?, 1, 1)",
    ).run(Date.now() + 86_400_000);
    db.close();
    const env: Record<string, string> = { ...e2e.env, DATABASE_PATH: path, SMS_SENDER_ID: "OPERATOR", ALLOWED_COMPANY_IDS: "" };
    const server = await startServe(env, e2e.dir);
    try {
      const command = "`bridge locations approve loc-old loc-stranger`";
      const warning = `[warn] 2 location(s) approved by a database upgrade, not by the operator: loc-old (company company-1), loc-stranger (company stranger-co);`;
      await waitFor(() => server.log.includes(warning));
      expect(server.log).toContain(`confirm the ones you know with ${command}, \`bridge locations unapprove\` the others`);
      const doctor = await runBridge(env, e2e.dir, ["doctor"]);
      expect(doctor.stdout).toContain(`warn  approvals: 2 location(s) approved by a database upgrade`);
      expect(doctor.stdout).toContain(command);
      expect(doctor.stdout).toContain(
        "warn  sender ID loc-stranger: approved by a database upgrade, not by the operator, with no API key of its own: its messages are reported failed; confirm it with `bridge locations approve loc-stranger`",
      );
      const status = await runBridge(env, e2e.dir, ["status"]);
      expect(status.stdout).toContain("confirm it with `bridge locations approve loc-stranger`");

      const res = await e2e.webhook(server.url, outbound("m-phish-2", { locationId: "loc-stranger", message: "Your account is locked: http://phish.example" }));
      expect(res.status).toBe(200);
      const [report] = await waitFor(() => nonEmpty(e2e.crm.statusReports().filter((r) => r.messageId === "m-phish-2")));
      expect(report?.body).toMatchObject({
        status: "failed",
        error: {
          message:
            "location loc-stranger was approved by a database upgrade, not by the operator: it may not use the shared gateway key until confirmed with `bridge locations approve loc-stranger`",
        },
      });
      expect(e2e.gateway.sent().filter((m) => m.message.includes("phish"))).toEqual([]);

      // The operator confirms the location they know; it sends on their key again.
      expect((await runBridge(env, e2e.dir, ["locations", "approve", "loc-old"])).code).toBe(0);
      expect((await e2e.webhook(server.url, outbound("m-known", { locationId: "loc-old" }))).status).toBe(200);
      await waitFor(() => nonEmpty(e2e.crm.statusReports().filter((r) => r.messageId === "m-known")));
      expect(e2e.gateway.sent().filter((m) => m.message === "hello m-known")).toMatchObject([{ apiKey: env.SMS_API_KEY, sender_id: "OPERATOR" }]);
    } finally {
      server.child.kill("SIGTERM");
      await exited(server.child);
    }
  });

  test("a new database needs no backup", async () => {
    const path = join(e2e.dir, "fresh.db");
    const server = await startServe({ ...e2e.env, DATABASE_PATH: path }, e2e.dir);
    server.child.kill("SIGTERM");
    expect(await exited(server.child)).toBe(0);
    expect(server.log).not.toContain("backed up");
    expect(version(path)).toBe(NOW);
    expect(existsSync(`${path}.backup-v0`)).toBe(false);
  });

  test("bridge migrate backs up and migrates; a second run says it is up to date", async () => {
    const path = oldDatabase("migrated.db");
    const first = await bridge("--db", path, "migrate");
    const backup = `${path}.backup-v${OLD}`;
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toContain(`migrated ${path} from schema version ${OLD} to ${NOW}; backup: ${backup}`);
    expect(first.stderr).toContain(`backed up to ${backup}`);
    // The rollback hint removes the write-ahead log first, or it would be replayed into the backup.
    expect(first.stdout).toContain(`to roll back: stop bridge, remove ${path}-wal and ${path}-shm, copy ${backup} over ${path}`);
    expect(statSync(backup).mode & 0o777).toBe(0o600);
    expect(version(backup)).toBe(OLD);
    expect(version(path)).toBe(NOW);

    const second = await bridge("--db", path, "migrate", "--json");
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ database: path, from_version: NOW, to_version: NOW, backup: null });
    expect((await bridge("--db", path, "locations", "list")).code).toBe(0);
  });

  test("a second migration from the same version keeps the first backup", async () => {
    const path = oldDatabase("twice.db");
    copyFileSync(path, `${path}.backup-v${OLD}`);
    const before = statSync(`${path}.backup-v${OLD}`).mtimeMs;
    const { code, stdout } = await bridge("--db", path, "migrate");
    expect(code).toBe(0);
    expect(statSync(`${path}.backup-v${OLD}`).mtimeMs).toBe(before);
    const written = /backup: (\S+)/.exec(stdout)?.[1] ?? "";
    expect(written.startsWith(`${path}.backup-v${OLD}.`)).toBe(true);
    expect(version(written)).toBe(OLD);
  });

  test("a database newer than this bridge is refused", async () => {
    const path = oldDatabase("newer.db", NOW);
    const db = new Database(path);
    db.pragma(`user_version = ${NOW + 1}`);
    db.close();
    for (const command of [["locations", "list"], ["migrate"]]) {
      const { code, stderr } = await bridge("--db", path, ...command);
      expect(code).toBe(1);
      expect(stderr).toContain(`database schema version ${NOW + 1} is newer than this bridge (${NOW}); upgrade bridge`);
    }
  });
});
