import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { openDb, type Db } from "../../src/db/index.ts";
import { MESSAGE_STATUSES, type MessageFilter } from "../../src/db/messages.ts";
import type { MessageLog } from "../../src/store/contract.ts";
import { openStore } from "../../src/store/open.ts";
import { numbered, pgMessages } from "../../src/store/postgres/messages.ts";
import { migratePostgres, type Pool } from "../../src/store/postgres/pool.ts";
import type { postgresFactory } from "./postgres.ts";

type Postgres = ReturnType<typeof postgresFactory>;

const T = 1_700_000_000_000;
const MONTH = "2023-11";

/** A job row as SQL writes it: every column the log reads, the rest their defaults. */
function job(id: number, location: string, createdAt: number, change: Record<string, unknown> = {}): Record<string, unknown> {
  const messageId = (change.message_id as string | undefined) ?? `msg-${id}`;
  const payload = JSON.stringify({ messageId, locationId: location, contactId: `c-${id}`, phone: "+639171234567", message: `hi ${id}`, attachments: [] });
  return {
    id, message_id: messageId, location_id: location, payload, state: "queued", outcome: null, error_code: null, error_message: null,
    gateway_message_id: null, attempts: 0, next_attempt_at: createdAt, created_at: createdAt, updated_at: createdAt, idempotency_key: null,
    first_sent_at: null, api_key_tag: null, receipt_deadline: null, receipt: null, gateway: "cast", sender_id: null, parts: null, sent_at: null,
    receipt_at: null, reported_status: null, reported_at: null, held: 0, unclear: 0, requeued_at: null, usage_month: null, reserved_parts: 0,
    counted: 0, ...change,
  };
}

const SENT = { idempotency_key: "idem", first_sent_at: T + 3, api_key_tag: "tag", attempts: 1, gateway_message_id: "gw", sent_at: T + 3, sender_id: "BRIDGE" };
const AWAITING = { ...SENT, state: "reporting", outcome: "delivered", receipt_deadline: T + 100, parts: 1 };
const SETTLED = { counted: 1, usage_month: MONTH, updated_at: T + 9, reported_at: T + 9 };

/**
 * Every status and then some, in three locations whose names sort differently by bytes and
 * by language: two received at once (ids order them), two locations waiting equally long.
 */
const JOBS = [
  job(1, "loc-a", T + 1),
  job(2, "loc-B", T + 2, { held: 1 }),
  job(3, "loc-a", T + 3, { ...SENT, state: "sending", gateway_message_id: null, sent_at: null, unclear: 1 }),
  job(4, "loc-a", T + 3, { ...AWAITING, gateway: "android:dev-1" }),
  job(5, "loc-B", T + 4, { ...AWAITING, gateway: "android:dev-1", parts: 2 }),
  job(6, "loc-a", T + 5, { ...AWAITING, receipt_at: T + 6, parts: 2 }),
  job(7, "loc-a", T + 6, { ...AWAITING, ...SETTLED, state: "done", receipt_deadline: null, receipt: "DELIVERED", parts: 3, reported_status: "delivered" }),
  job(8, "loc-a", T + 7, { ...SENT, ...SETTLED, state: "done", outcome: "failed", error_code: "invalid_phone", error_message: "bad", reported_status: "failed" }),
  job(9, "loc-B", T + 8, { ...SENT, ...SETTLED, message_id: "test-9", state: "dead", outcome: "failed", error_code: "gateway_rejected" }),
  job(10, "loc-a", T, { message_id: "test-10" }),
  job(11, "ZZ", T, { state: "sending" }),
  job(12, "loc-a", T + 9, { message_id: "test-12", requeued_at: T + 8 }),
];

const EVENTS: [number, number, string, string][] = [
  [2, T + 2, "held", "key refused"], [4, T + 4, "retry", "timeout"], [5, T + 5, "sent", "by the phone"], [8, T + 7, "failed", "invalid phone"],
  [8, T + 7, "report_retry", "HighLevel 502"], [4, T + 3, "error", "sealed"], [9, T + 8, "report_failed", "gave up"],
];

const USAGE_ROWS: [string, string, string, number, number, number, number, number][] = [
  ["loc-a", MONTH, "cast", 2, 3, 1, 1, 0], ["loc-B", MONTH, "cast", 1, 1, 0, 0, 1],
];

/** Runs one statement, with `?` for each value, on one database. */
type Run = (sql: string, params: unknown[]) => Promise<unknown[]>;

async function seed(run: Run): Promise<void> {
  for (const row of JOBS) {
    const columns = Object.keys(row);
    await run(`INSERT INTO jobs (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`, Object.values(row));
  }
  for (const event of EVENTS) await run("INSERT INTO job_events (job_id, at, kind, detail) VALUES (?, ?, ?, ?)", event);
  for (const row of USAGE_ROWS) {
    await run("INSERT INTO usage (location_id, month, gateway, messages, parts, delivered, failed_invalid, failed_rejected) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row);
  }
}

/** The tables the log writes, whole, to hold the two databases equal after a write. */
async function tables(run: Run): Promise<unknown[]> {
  return Promise.all(["jobs ORDER BY id", "job_events ORDER BY id", "usage ORDER BY location_id, month, gateway"].map((t) => run(`SELECT * FROM ${t}`, [])));
}

const FILTERS: MessageFilter[] = [
  { limit: 100 }, { limit: 2 }, { limit: 0 },
  ...["loc-a", "loc-B", "ZZ", "loc-none"].map((locationId) => ({ locationId, limit: 100 })),
  ...MESSAGE_STATUSES.map((status) => ({ status, limit: 100 })),
  { since: T + 3, limit: 100 }, { since: T + 99, limit: 100 },
  { before: { createdAt: T + 3, id: 4 }, limit: 100 }, { before: { createdAt: T + 3, id: 4 }, limit: 1 },
  { locationId: "loc-a", status: "sent", since: T + 1, before: { createdAt: T + 9, id: 1 }, limit: 5 },
];

/** What each read of the log answers over the seeded rows. */
async function reads(log: MessageLog): Promise<unknown[]> {
  return [
    await Promise.all(FILTERS.map((filter) => log.list(filter))),
    await Promise.all([...JOBS.map((j) => j.message_id as string), "msg-none"].map((id) => log.get(id))),
    await Promise.all([...JOBS.map((j) => j.id as number), 99].map((id) => log.events(id))),
    await log.counts(),
    await log.backlog(),
    await Promise.all([["loc-a", T], ["loc-a", T + 6], ["loc-B", T + 4], ["loc-none", T]].map(([l, s]) => log.usage(l as string, s as number))),
    await Promise.all([["loc-a", T, "test-"], ["loc-a", T + 1, "test-"], ["loc-B", T, "test-"], ["loc-a", T, "msg-"], ["loc-a", T, "%"]]
      .map(([l, s, p]) => log.receivedSince(l as string, s as number, p as string))),
  ];
}

/** The message log on PostgreSQL and on SQLite, fed the same rows by the same SQL; closed by `end`. */
async function bothLogs(postgres: Postgres) {
  const pool = await postgres.schema("message_log");
  await migratePostgres(pool);
  // Names compared by language, as in a database made with a locale other than C: the log must still order them as SQLite does.
  await pool.query(`ALTER TABLE jobs ALTER COLUMN location_id TYPE TEXT COLLATE "und-x-icu"`);
  const dir = mkdtempSync(join(tmpdir(), "bridge-log-"));
  const db = openDb(join(dir, "bridge.db"));
  const pg: Run = async (sql, params) => (await pool.query(numbered(sql), params)).rows;
  const sqlite: Run = async (sql, params) => (sql.startsWith("SELECT") ? db.prepare(sql).all(...params) : (db.prepare(sql).run(...params), []));
  await seed(pg);
  await seed(sqlite);
  return {
    pg: { log: pgMessages(pool), run: pg },
    sqlite: { log: openStore({ encryptionKey: undefined }, db).messages, run: sqlite },
    async end() {
      await endBoth(pool, db, postgres);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function endBoth(pool: Pool, db: Db, postgres: Postgres): Promise<void> {
  db.close();
  await pool.end();
  await postgres.drop("message_log");
}

/** PostgreSQL's message log against SQLite's, over the same rows: every answer the same. */
export function postgresLogChecks(postgres: Postgres): void {
  test("postgres: the message log answers as SQLite's over the same rows, before and after requeues", async () => {
    const { pg, sqlite, end } = await bothLogs(postgres);
    try {
      const [lists, , , counts, backlog] = await reads(sqlite.log);
      // The rows show every status, and the backlog has a tie that only the names order.
      expect(counts).toEqual({ queued: 3, held: 1, sending: 2, on_phone: 1, sent: 2, delivered: 1, failed: 2 });
      expect(backlog).toEqual([
        { locationId: "ZZ", waiting: 1, oldest: T }, { locationId: "loc-a", waiting: 4, oldest: T }, { locationId: "loc-B", waiting: 1, oldest: T + 2 },
      ]);
      expect((lists as unknown[][])[0]).toHaveLength(JOBS.length);
      expect(await reads(pg.log)).toStrictEqual(await reads(sqlite.log));

      const [failed, dead, queued] = await Promise.all(["msg-8", "test-9", "msg-1"].map((id) => pg.log.get(id)));
      for (const side of [pg, sqlite]) {
        expect(await side.log.requeue(failed!, T + 20, "by the operator")).toBe(true);
        expect(await side.log.requeue(failed!, T + 21, "again")).toBe(false);
        expect(await side.log.requeue(queued!, T + 21, "not settled")).toBe(false);
        await side.run("UPDATE jobs SET updated_at = updated_at + 1 WHERE id = ?", [dead!.id]);
        expect(await side.log.requeue(dead!, T + 22, "changed since")).toBe(false);
      }
      const [pgTables, sqliteTables] = [await tables(pg.run), await tables(sqlite.run)];
      expect(pgTables).toEqual(sqliteTables);
      // What msg-8 counted (a message, failed_invalid) is taken back; loc-B's row is untouched.
      expect(sqliteTables[2]).toMatchObject([
        { location_id: "loc-B", messages: 1, failed_rejected: 1 }, { location_id: "loc-a", messages: 1, parts: 3, delivered: 1, failed_invalid: 0 },
      ]);
      expect(await reads(pg.log)).toStrictEqual(await reads(sqlite.log));
    } finally {
      await end();
    }
  });
}
