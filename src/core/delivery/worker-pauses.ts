import { wallClock } from "../clock.ts";
import { delayMs, RETRY } from "../retry.ts";

export type Pauses = ReturnType<typeof createPauses>;

/**
 * Jobs whose last run threw (the database refused a write, say), or that wait for the
 * gateway's budget: when each may run again, and after how many failures. Without it
 * the same job would run again at once. These pauses are timers of this process, so
 * they are kept in real time (the wall clock, src/core/clock.ts); the queue's due times are the injected now().
 */
export function createPauses(firstBackoffMs: number) {
  const pauses = new Map<number, { failures: number; notBefore: number }>();
  return {
    /** The job ran; a positive `waitMs`: it waits that long for a budget, which is no failure. */
    ran(id: number, waitMs: number | void): void {
      if (typeof waitMs === "number" && waitMs > 0) pauses.set(id, { failures: 0, notBefore: wallClock() + waitMs });
      else pauses.delete(id);
    },
    /** The job threw: how long (ms) it waits before it runs again, longer after each failure. */
    failed(id: number): number {
      const failures = (pauses.get(id)?.failures ?? 0) + 1;
      const delay = delayMs(RETRY.job, failures - 1, firstBackoffMs);
      pauses.set(id, { failures, notBefore: wallClock() + delay });
      return delay;
    },
    /** Before this time (the wall clock) the job does not run; 0: it is not pausing. */
    notBefore(id: number): number {
      return pauses.get(id)?.notBefore ?? 0;
    },
    /** How many jobs are pausing now; forgets those not seen for a minute after their pause. */
    count(): number {
      let count = 0;
      const at = wallClock();
      for (const [id, { notBefore }] of pauses) {
        if (notBefore > at) count++;
        else if (notBefore + 60_000 < at) pauses.delete(id); // it left the queue meanwhile
      }
      return count;
    },
  };
}
