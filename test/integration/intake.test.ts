import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { createIntake } from "../../src/core/intake.ts";
import { openDb, type Db } from "../../src/db/index.ts";
import { createJobStore, type OutboundMessage } from "../../src/db/jobs.ts";

let dir: string;
let db: Db;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "bridge-intake-"));
  db = openDb(join(dir, "bridge.db"));
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function message(messageId: string): OutboundMessage {
  return { messageId, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] };
}

test("messages enqueued together are committed in one transaction, each told its own outcome", async () => {
  const jobs = createJobStore(db);
  const intake = createIntake(jobs, Date.now);
  const outcomes = await Promise.all(["a", "b", "a", "c"].map((id) => intake.enqueue(message(id))));
  expect(outcomes).toEqual([true, true, false, true]);
  expect(jobs.counts()).toEqual({ queued: 3 });
  // Another connection sees the rows: they are committed, not just in memory.
  const other = openDb(join(dir, "bridge.db"));
  expect(createJobStore(other).get("c")?.state).toBe("queued");
  other.close();
});

test("messages arriving within the window share one commit, across turns of the event loop; later ones get the next", async () => {
  const jobs = createJobStore(db);
  const batches: string[][] = [];
  const counting = {
    enqueueMany: (messages: OutboundMessage[], now: number) => {
      batches.push(messages.map((m) => m.messageId));
      return jobs.enqueueMany(messages, now);
    },
  };
  const intake = createIntake(counting, Date.now, 100);
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const first = intake.enqueue(message("a"));
  await turn();
  const second = intake.enqueue(message("b"));
  await turn();
  const third = intake.enqueue(message("c"));
  expect(batches).toEqual([]); // nothing is committed, so nothing is acknowledged, before the window closes
  await expect(Promise.all([first, second, third])).resolves.toEqual([true, true, true]);
  await expect(intake.enqueue(message("d"))).resolves.toBe(true);
  expect(batches).toEqual([["a", "b", "c"], ["d"]]);
});

test("a batch that cannot be stored is refused whole: every caller is told, nothing is kept", async () => {
  const jobs = createJobStore(db);
  const intake = createIntake(jobs, Date.now);
  db.exec("CREATE TRIGGER no_c BEFORE INSERT ON jobs WHEN NEW.message_id = 'c' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
  const outcomes = await Promise.allSettled(["a", "b", "c"].map((id) => intake.enqueue(message(id))));
  expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
  expect(jobs.counts()).toEqual({});
  // The next window is a new batch.
  await expect(intake.enqueue(message("a"))).resolves.toBe(true);
});
