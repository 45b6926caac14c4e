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
