import type { DueJob, Job, JobStore } from "../../db/jobs.ts";
import { clip, errorMessage } from "../../errors.ts";
import type { Logger } from "../log.ts";
import { createPruner, type PrunerOptions } from "./prune.ts";
import { recoverInterrupted } from "./recovery.ts";
import { delayMs, RETRY, sleep } from "../retry.ts";

export interface WorkerOptions {
  jobs: JobStore;
  /** Handles a job; a number: the ms until it may run again (it waits for a budget, not a failure). */
  run: (job: Job) => Promise<number | void>;
  /** When a location last got a send slot: the one served longest ago goes first (fair turns). */
  lastServed?: (locationId: string) => number;
  /** Before this time a location's queued job would only be told to wait: not started. */
  readyAt?: (locationId: string) => number;
  now: () => number;
  log: Logger;
  /** Jobs handled at once. */
  concurrency?: number;
  /** Longest sleep between looks at the queue (scheduled retries come due meanwhile). */
  pollMs?: number;
  /** First wait before a job that threw runs again; doubles up to a minute. */
  backoffMs?: number;
  /** How long a finished job is kept: as long, a repeated messageId is not queued again. */
  retentionMs?: number;
  /** The API keys kept for receipts (pruned with the finished jobs). */
  keys?: PrunerOptions["keys"];
  /** Replies (their finished ones pruned with the finished jobs). */
  replies?: PrunerOptions["replies"];
}

/**
 * New jobs wake the worker at most this often: under a flood of webhooks, one look at
 * the queue serves many of them (each look reads every waiting location).
 */
const FILL_GAP_MS = 5;

export type Worker = ReturnType<typeof createWorker>;

/**
 * The in-process queue worker: drains due jobs from SQLite with bounded concurrency.
 * A new job wakes it at once (`notify`); otherwise it looks again after `pollMs`.
 * Crash recovery (recovery.ts) and pruning (prune.ts) are started and stopped with it.
 */
export function createWorker(options: WorkerOptions) {
  const { jobs, log, now } = options;
  const concurrency = options.concurrency ?? 16;
  const pollMs = options.pollMs ?? 500;
  const firstBackoffMs = options.backoffMs ?? RETRY.job.firstMs;
  const pruner = createPruner({ jobs, log, now, retentionMs: options.retentionMs ?? 30 * 24 * 60 * 60_000, keys: options.keys, replies: options.replies });
  const active = new Map<number, Promise<void>>();
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  // Jobs whose last run threw (the database refused a write, say), or that wait for the
  // gateway's budget: when each may run again, and after how many failures. Without it
  // the same job would run again at once. These pauses are timers of this process, so
  // they are kept in real time (Date.now); the queue's due times are the injected now().
  const failing = new Map<number, { failures: number; notBefore: number }>();
  // The earliest time a job skipped in the last look may run: the next look then.
  let nextLook = Infinity;
  // When the queue was last looked at: a burst of new jobs wakes it at most every FILL_GAP_MS.
  let lastFill = 0;
  let deferred: ReturnType<typeof setTimeout> | undefined;

  function startJob(due: DueJob): void {
    const job = jobs.byId(due.id);
    if (!job) return; // finished and pruned meanwhile
    const done = options
      .run(job)
      .then(
        (waitMs) => {
          if (typeof waitMs === "number" && waitMs > 0) failing.set(job.id, { failures: 0, notBefore: Date.now() + waitMs });
          else failing.delete(job.id);
        },
        (error) => {
          const failures = (failing.get(job.id)?.failures ?? 0) + 1;
          const delay = delayMs(RETRY.job, failures - 1, firstBackoffMs);
          failing.set(job.id, { failures, notBefore: Date.now() + delay });
          log.error(`job for message ${job.message.messageId} failed: ${errorMessage(error)}; trying again in ${delay} ms`);
          // The operator's view shows why the message waits (`bridge messages show`). When the
          // database itself refuses the write, the line above is all there is.
          try {
            jobs.noteError(job.id, clip(errorMessage(error)), now());
          } catch {}
        },
      )
      .finally(() => {
        active.delete(job.id);
        wake?.();
      });
    active.set(job.id, done);
  }

  function fill(): void {
    const free = concurrency - active.size;
    if (free <= 0) return;
    // Look past the jobs pausing, so they cannot hold up the rest; but only so far: a
    // look must stay cheap while many fail at once (a disk that refuses every write).
    const extra = Math.min(pausing(), concurrency * 2);
    const at = Date.now();
    nextLook = Infinity;
    // A location whose sends wait for the gateway's budget: only its reports are read now.
    const waiting = (locationId: string) => {
      const ready = options.readyAt?.(locationId) ?? 0;
      if (ready > at) nextLook = Math.min(nextLook, ready);
      return ready > at;
    };
    lastFill = at;
    for (const job of inTurn(jobs.due(now(), free + active.size + extra, options.readyAt && waiting))) {
      if (active.size >= concurrency) break;
      if (active.has(job.id)) continue;
      const notBefore = Math.max(failing.get(job.id)?.notBefore ?? 0, job.state === "queued" ? (options.readyAt?.(job.locationId) ?? 0) : 0);
      if (notBefore > at) {
        nextLook = Math.min(nextLook, notBefore);
        continue;
      }
      startJob(job);
    }
  }

  /**
   * The due jobs come in turns (each location's first, then each one's second, …);
   * within a turn, the location served longest ago goes first.
   */
  function inTurn(due: DueJob[]): DueJob[] {
    const { lastServed } = options;
    if (!lastServed) return due;
    return due.toSorted((a, b) => a.turn - b.turn || lastServed(a.locationId) - lastServed(b.locationId));
  }

  /** How many jobs are pausing now; forgets those not seen for a minute after their pause. */
  function pausing(): number {
    let count = 0;
    const at = Date.now();
    for (const [id, { notBefore }] of failing) {
      if (notBefore > at) count++;
      else if (notBefore + 60_000 < at) failing.delete(id); // it left the queue meanwhile
    }
    return count;
  }

  async function run(): Promise<void> {
    while (running) {
      try {
        fill();
      } catch (error) {
        log.error(`queue: cannot read jobs: ${errorMessage(error)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, Math.min(pollMs, nextLook - Date.now())));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }

  return {
    /** Recovers the sends a crash caught mid-way, then starts draining (and pruning, hourly). */
    start(): void {
      if (running) return;
      recoverInterrupted(jobs, log, now());
      running = true;
      loop = run();
      pruner.start();
    },
    /** A job was committed: look at the queue now, or in a moment if it was just looked at. */
    notify(): void {
      const gap = lastFill + FILL_GAP_MS - Date.now();
      if (gap <= 0) return void wake?.();
      deferred ??= setTimeout(() => {
        deferred = undefined;
        wake?.();
      }, gap);
    },
    get running(): boolean {
      return running;
    },
    /** Stops taking jobs and waits up to `graceMs` for those in flight. Returns how many were left. */
    async stop(graceMs: number): Promise<number> {
      running = false;
      pruner.stop();
      clearTimeout(deferred);
      wake?.();
      await loop;
      await Promise.race([Promise.allSettled(active.values()), sleep(graceMs)]);
      return active.size;
    },
  };
}
