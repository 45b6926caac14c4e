import { expect, test } from "vitest";
import type { Db } from "../../src/db/index.ts";
import { createJobStore } from "../../src/db/jobs.ts";
import { useTempDb } from "../helpers/db.ts";

const t = useTempDb("bridge-due-");

/** The real database, counting how often the queue's per-location look (a statement on next_attempt_at) runs. */
function counting(db: Db) {
  let looks = 0;
  const prepare = ((sql: string) => {
    const statement = db.prepare(sql);
    if (!sql.includes("next_attempt_at <= ?")) return statement;
    return new Proxy(statement, {
      get: (target, name, receiver) => (name === "all" ? (...args: unknown[]) => (looks++, target.all(...args)) : Reflect.get(target, name, receiver)),
    });
  }) as Db["prepare"];
  const wrapped = new Proxy(db, { get: (target, name, receiver) => (name === "prepare" ? prepare : Reflect.get(target, name, receiver)) });
  return { db: wrapped, looks: () => looks };
}

test("locations whose only jobs wait for a later receipt check cost no look of their own", () => {
  const { db, looks } = counting(t.db);
  const jobs = createJobStore(db);
  const now = 1_000_000;
  for (let i = 0; i < 50; i++) {
    const message = { messageId: `m-${i}`, locationId: `loc-${i}`, contactId: "", phone: "+639171234567", message: "hi", attachments: [] };
    jobs.enqueue(message, now);
    const { id } = jobs.get(message.messageId)!;
    jobs.claimForSending(id, now, { idempotencyKey: `key-${i}`, apiKeyTag: "tag" });
    jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: `CAST${i}` }, now, { at: now + 60_000, deadline: now + 1_800_000 });
  }
  jobs.enqueue({ messageId: "m-new", locationId: "loc-new", contactId: "", phone: "+639171234567", message: "hi", attachments: [] }, now);

  const before = looks();
  const due = jobs.due(now, 16);

  expect(due.map((d) => d.locationId)).toEqual(["loc-new"]);
  expect(looks() - before).toBe(1);
  // Once the receipt checks are due, they are found.
  expect(jobs.due(now + 60_000, 100)).toHaveLength(51);
});

/** The statements `run` executes on the jobs table, each with the parameters it ran with. */
function recording(db: Db) {
  const runs: { sql: string; args: unknown[] }[] = [];
  const prepare = ((sql: string) => {
    const statement = db.prepare(sql);
    const all = (...args: unknown[]) => (runs.push({ sql, args }), statement.all(...args));
    // Every other method called on the statement itself (its addon refuses a proxy as `this`).
    return new Proxy(statement, {
      get: (target, name) => {
        const value: unknown = Reflect.get(target, name);
        return name === "all" ? all : typeof value === "function" ? value.bind(target) : value;
      },
    });
  }) as Db["prepare"];
  const wrapped = new Proxy(db, { get: (target, name, receiver) => (name === "prepare" ? prepare : Reflect.get(target, name, receiver)) });
  return { db: wrapped, runs };
}

// EXPLAIN QUERY PLAN printed the same line for a look that walked a location's whole backlog of
// sends before its first report and for one that did not: both searched one index of both states.
// Read from an index that holds one state only, no look can pass a row of the other.
test("the due look reads each state from an index of that state alone, whatever the backlog of sends", () => {
  const { db, runs } = recording(t.db);
  const jobs = createJobStore(db);
  const now = 1_000_000;
  const message = (id: string) => ({ messageId: id, locationId: "loc-big", contactId: "", phone: "+639171234567", message: "hi", attachments: [] });
  t.db.transaction(() => {
    for (let i = 0; i < 2000; i++) jobs.enqueue(message(`q-${i}`), now);
  })();
  const report = jobs.get("q-0")!;
  jobs.claimForSending(report.id, now, { idempotencyKey: "key-0", apiKeyTag: "tag" });
  jobs.recordResult(report.id, { outcome: "delivered", gatewayMessageId: "CAST0" }, now, { at: now, deadline: now + 1_800_000 });

  const due = jobs.due(now, 4);

  expect(due[0]).toMatchObject({ id: report.id, state: "reporting", turn: 1 });
  const searched = runs.flatMap(({ sql, args }) =>
    t.db
      .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...args)
      .map((row) => row.detail)
      .filter((detail) => /\bjobs\b/.test(detail)),
  );
  expect(searched.length).toBeGreaterThan(0);
  for (const detail of searched) {
    const index = /^SEARCH jobs USING (?:COVERING )?INDEX (\w+)/.exec(detail)?.[1];
    expect(index, detail).toBeDefined();
    const definition = t.db.prepare<[string], string>("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").pluck().get(index!);
    expect(definition, index).toMatch(/WHERE state = '(queued|reporting)'$/);
  }
});
