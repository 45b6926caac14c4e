import type { Db } from "./index.ts";

/**
 * Runs `write` in the next group commit; settles once that commit is on disk.
 * `now`: no other write is on its way, so commit at once instead of after the window.
 */
export type Commit = <T>(write: () => T, now?: boolean) => Promise<T>;

interface Pending {
  write: () => unknown;
  done: (value: unknown) => void;
  fail: (error: unknown) => void;
}

type Attempt = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit. With synchronous=FULL every commit waits for the disk, and on a busy
 * machine for a core again after it, with the event loop stopped. So the writes queued
 * within `windowMs` of the first one waiting (the webhooks' new jobs and the queue
 * worker's state changes alike) share one transaction and one fsync. The window is
 * short because each webhook waits that long for its answer (docs/PERFORMANCE.md has
 * the windows tried). And when the caller knows no one else could join (`now`), the
 * batch commits at once.
 *
 * Each caller's promise settles only after the commit, never before: with its write's
 * result, or its own error. A write must be a single statement (or all-or-nothing
 * itself): SQLite undoes just the failed statement, and the others commit. Only when
 * SQLite undid the whole transaction, or the commit itself failed, is every write of
 * the batch refused, and then none of them was stored.
 */
export function createGroupCommit(db: Pick<Db, "transaction" | "inTransaction">, windowMs = 1): Commit {
  let pending: Pending[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const runAll = db.transaction((batch: Pending[]) => batch.map((p) => attempt(p.write)));

  function attempt(write: () => unknown): Attempt {
    try {
      return { ok: true, value: write() };
    } catch (error) {
      if (!db.inTransaction) throw error; // SQLite rolled back everything: refuse the batch
      return { ok: false, error };
    }
  }

  function flush(): void {
    clearTimeout(timer);
    const batch = pending;
    pending = [];
    let outcomes: Attempt[];
    try {
      // IMMEDIATE takes the write lock up front: a CLI holding it makes the batch wait
      // once (busy_timeout), not every write in it in turn.
      outcomes = runAll.immediate(batch);
    } catch (error) {
      for (const p of batch) p.fail(error);
      return;
    }
    outcomes.forEach((outcome, i) => {
      const p = batch[i] as Pending;
      if (outcome.ok) p.done(outcome.value);
      else p.fail(outcome.error);
    });
  }

  return <T>(write: () => T, now = false) =>
    new Promise<T>((done, fail) => {
      const p: Pending = { write, done: done as (value: unknown) => void, fail };
      pending.push(p);
      if (now) flush();
      else if (pending.length === 1) timer = setTimeout(flush, windowMs);
    });
}
