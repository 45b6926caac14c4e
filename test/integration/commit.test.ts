import { expect, test } from "vitest";
import { createGroupCommit } from "../../src/db/commit.ts";
import { openDb, type Db } from "../../src/db/index.ts";
import { createJobStore, type OutboundMessage } from "../../src/db/jobs.ts";
import { useTempDb } from "../helpers/db.ts";

const t = useTempDb("bridge-commit-");

function message(messageId: string): OutboundMessage {
  return { messageId, locationId: "loc-1", contactId: "", phone: "+639171234567", message: "hi", attachments: [] };
}

/** The database as the group commit sees it, recording how many writes each transaction held. */
function countingTransactions(batches: number[]): Pick<Db, "transaction" | "inTransaction"> {
  return {
    get inTransaction() {
      return t.db.inTransaction;
    },
    transaction: ((fn: (batch: unknown[]) => unknown) => {
      const run = t.db.transaction(fn);
      return {
        immediate(batch: unknown[]) {
          batches.push(batch.length);
          return run.immediate(batch);
        },
      };
    }) as unknown as Db["transaction"],
  };
}

const enqueue = (id: string) => () => t.jobs.enqueue(message(id), Date.now());

test("writes queued together are committed in one transaction, each told its own outcome", async () => {
  const commit = createGroupCommit(t.db);
  const outcomes = await Promise.all(["a", "b", "a", "c"].map((id) => commit(enqueue(id))));
  expect(outcomes).toEqual([true, true, false, true]);
  expect(t.jobs.counts()).toEqual({ queued: 3 });
  // Another connection sees the rows: they are committed, not just in memory.
  const other = openDb(t.path);
  expect(createJobStore(other).get("c")?.state).toBe("queued");
  other.close();
});

test("writes arriving within the window share one commit, across turns of the event loop; later ones get the next", async () => {
  const batches: number[] = [];
  const commit = createGroupCommit(countingTransactions(batches), 100);
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const first = commit(enqueue("a"));
  await turn();
  const second = commit(enqueue("b"));
  await turn();
  const third = commit(() => t.jobs.claimForSending(1, Date.now())); // the queue worker's kind of write
  expect(batches).toEqual([]); // nothing is committed, so nothing is acknowledged, before the window closes
  expect(t.jobs.counts()).toEqual({});
  await expect(Promise.all([first, second, third])).resolves.toEqual([true, true, true]);
  await expect(commit(enqueue("d"))).resolves.toBe(true);
  expect(batches).toEqual([3, 1]);
  expect(t.jobs.counts()).toEqual({ queued: 2, sending: 1 });
});

test("a write marked `now` commits at once, together with the writes waiting for the window", async () => {
  const batches: number[] = [];
  const commit = createGroupCommit(countingTransactions(batches), 60_000); // a window this test would time out in
  const waiting = commit(enqueue("a"));
  await new Promise((resolve) => setImmediate(resolve));
  expect(batches).toEqual([]);
  await expect(Promise.all([waiting, commit(enqueue("b"), true)])).resolves.toEqual([true, true]);
  expect(batches).toEqual([2]);
  expect(t.jobs.counts()).toEqual({ queued: 2 });
  await expect(commit(enqueue("c"), true)).resolves.toBe(true); // and the next batch starts afresh
  expect(batches).toEqual([2, 1]);
});

test("a write that fails is refused alone: the others in its transaction are committed", async () => {
  const commit = createGroupCommit(t.db);
  t.db.exec("CREATE TRIGGER no_c BEFORE INSERT ON jobs WHEN NEW.message_id = 'c' BEGIN SELECT RAISE(ABORT, 'refused'); END");
  const outcomes = await Promise.allSettled(["a", "b", "c", "d"].map((id) => commit(enqueue(id))));
  expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect(outcomes[2]).toMatchObject({ reason: { message: "refused" } });
  expect(t.jobs.counts()).toEqual({ queued: 3 });
  expect(t.jobs.get("c")).toBeUndefined();
});

test("when SQLite undoes the whole transaction, every write of the batch is refused and nothing is kept", async () => {
  const commit = createGroupCommit(t.db);
  t.db.exec("CREATE TRIGGER no_c BEFORE INSERT ON jobs WHEN NEW.message_id = 'c' BEGIN SELECT RAISE(ROLLBACK, 'disk I/O error'); END");
  const outcomes = await Promise.allSettled(["a", "b", "c", "d"].map((id) => commit(enqueue(id))));
  expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
  expect(t.jobs.counts()).toEqual({});
  // The next window is a new batch, in a new transaction.
  await expect(commit(enqueue("a"))).resolves.toBe(true);
  expect(t.jobs.counts()).toEqual({ queued: 1 });
});

test("a database locked by another writer refuses the batch once, after the busy timeout, instead of write by write", async () => {
  const other = openDb(t.path);
  other.pragma("busy_timeout = 0");
  t.db.pragma("busy_timeout = 100");
  const batches: number[] = [];
  const commit = createGroupCommit(countingTransactions(batches));
  other.exec("BEGIN IMMEDIATE");
  const outcomes = await Promise.allSettled(["a", "b", "c", "d", "e"].map((id) => commit(enqueue(id))));
  other.exec("ROLLBACK");
  other.close();
  expect(outcomes.every((o) => o.status === "rejected")).toBe(true);
  expect(outcomes[0]).toMatchObject({ reason: { code: "SQLITE_BUSY" } });
  expect(batches).toEqual([5]); // one transaction tried (one wait for the lock), not one per write
  await expect(commit(enqueue("a"))).resolves.toBe(true);
  expect(batches).toEqual([5, 1]);
});
