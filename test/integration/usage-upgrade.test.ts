import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { migrate } from "../../src/db/schema.ts";
import { createUsageStore } from "../../src/db/usage-store.ts";

/** 31 March 2026, 23:00 in Manila (15:00 UTC), and 1 April, 01:00. */
const MARCH = Date.parse("2026-03-31T15:00:00Z");
const APRIL = Date.parse("2026-03-31T17:00:00Z");

test("the upgrade to schema 17 counts the settled messages and routed replies its log still holds, in Manila's months", () => {
  const path = join(mkdtempSync(join(tmpdir(), "bridge-usage-upgrade-")), "bridge.db");
  const old = new Database(path);
  for (const sql of MIGRATIONS.slice(0, 16)) old.exec(sql);
  old.pragma("user_version = 16");
  const job = old.prepare(`INSERT INTO jobs (message_id, location_id, payload, state, outcome, error_code, gateway_message_id, receipt,
    parts, gateway, first_sent_at, next_attempt_at, created_at, updated_at) VALUES (?, 'loc-1', '{}', ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`);
  job.run("m-1", "done", "delivered", null, "cast-1", "DELIVRD", 2, "cast", MARCH, MARCH, MARCH);
  job.run("m-2", "dead", "failed", "UNDELIV", "cast-2", "UNDELIV", 1, "cast", APRIL, MARCH, APRIL);
  job.run("m-3", "done", "failed", "FAILED", "cast-3", "FAILED", 3, "cast", APRIL, APRIL, APRIL);
  job.run("m-4", "done", "failed", "opted_out", null, null, null, "cast", null, APRIL, APRIL);
  job.run("m-5", "done", "delivered", null, "p-1", "DELIVRD", 1, "android:dev-1", APRIL, APRIL, APRIL);
  job.run("m-6", "reporting", "delivered", null, "cast-6", null, 1, "cast", APRIL, APRIL, APRIL); // not settled: counted as it settles
  old.prepare(`INSERT INTO inbound (inbound_id, source, dedupe_key, phone, text, received_ms, location_id, routed_by, state, next_attempt_at,
    created_at, updated_at) VALUES (?, 'android', ?, '+639171234567', 'hi', 0, ?, 'device', 'done', 0, ?, ?)`).run("in-1", "k-1", "loc-1", APRIL, APRIL);
  old.close();

  const db = openDb(path, { keepOlderSchema: true });
  try {
    migrate(db);
    const rows = createUsageStore(db).list({});
    const pick = ({ month, gateway, messages, parts, delivered, failed_undelivered, refused_opt_out, replies }: (typeof rows)[number]) =>
      ({ month, gateway, messages, parts, delivered, failed_undelivered, refused_opt_out, replies });
    expect(rows.map(pick)).toEqual([
      { month: "2026-03", gateway: "cast", messages: 1, parts: 2, delivered: 1, failed_undelivered: 0, refused_opt_out: 0, replies: 0 },
      // m-2 was first sent in April (Manila), though created in March; m-3's FAILED was refunded.
      { month: "2026-04", gateway: "android", messages: 1, parts: 1, delivered: 1, failed_undelivered: 0, refused_opt_out: 0, replies: 1 },
      { month: "2026-04", gateway: "cast", messages: 3, parts: 1, delivered: 0, failed_undelivered: 2, refused_opt_out: 1, replies: 0 },
    ]);
    expect(db.prepare("SELECT message_id FROM jobs WHERE counted = 0").pluck().all()).toEqual(["m-6"]);
  } finally {
    db.close();
    rmSync(dirname(path), { recursive: true, force: true });
  }
});
