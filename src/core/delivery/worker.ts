import { wallClock } from "../clock.ts";
import { createBell } from "../bell.ts";
import { errorMessage } from "../../errors.ts";
import { sleep } from "../retry.ts";
import { createPruner } from "./prune.ts";
import { recoverInterrupted } from "./recovery.ts";
import { createFiller } from "./worker-fill.ts";
import type { WorkerOptions } from "./worker-options.ts";

export type { WorkerOptions } from "./worker-options.ts";

/**
 * New jobs wake the worker at most this often: under a flood of webhooks, one look at
 * the queue serves many of them (each look reads every waiting location).
 */
const FILL_GAP_MS = 5;

export type Worker = ReturnType<typeof createWorker>;

/**
 * The in-process queue worker: drains due jobs from SQLite with bounded concurrency.
 * A new job wakes it at once (`notify`); otherwise it looks again after `pollMs`.
 * Crash recovery (recovery.ts) and pruning (prune.ts) are started and stopped with it;
 * each look at the queue is worker-fill.ts, the pauses of jobs that failed worker-pauses.ts.
 */
export function createWorker(options: WorkerOptions) {
  const { jobs, log, now } = options;
  const pollMs = options.pollMs ?? 500;
  const pruner = createPruner({
    jobs, log, now, retentionMs: options.retentionMs ?? 30 * 24 * 60 * 60_000, keys: options.keys, replies: options.replies, leads: options.leads, appSessions: options.appSessions,
    unsubscribed: options.unsubscribed,
  });
  const alarm = createBell();
  const wake = alarm.ring;
  const filler = createFiller(options, wake);
  let running = false;
  let loop: Promise<void> | undefined;
  let deferred: ReturnType<typeof setTimeout> | undefined;

  async function run(): Promise<void> {
    while (running) {
      try {
        await filler.fill();
      } catch (error) {
        log.error(`queue: cannot read jobs: ${errorMessage(error)}`);
      }
      await alarm.sleep(Math.max(1, Math.min(pollMs, filler.nextLook() - wallClock())));
    }
  }

  return {
    /** Recovers the sends a crash caught mid-way, then starts draining (and pruning, hourly). */
    async start(): Promise<void> {
      if (running) return;
      if (options.recoverAtStart !== false) await recoverInterrupted(jobs, log, now(), options.resendWindows ?? {});
      running = true;
      loop = run();
      pruner.start();
    },
    /** A job was committed: look at the queue now, or in a moment if it was just looked at. */
    notify(): void {
      const gap = filler.lastFill() + FILL_GAP_MS - wallClock();
      if (gap <= 0) return wake();
      deferred ??= setTimeout(() => {
        deferred = undefined;
        wake();
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
      wake();
      await loop;
      await Promise.race([Promise.allSettled(filler.active.values()), sleep(graceMs)]);
      return filler.active.size;
    },
  };
}

