import type { JobStore, OutboundMessage } from "../db/jobs.ts";

interface Waiting {
  message: OutboundMessage;
  done: (fresh: boolean) => void;
  fail: (error: unknown) => void;
}

/**
 * Group commit for webhooks. With synchronous=FULL every commit waits for the disk,
 * so webhooks arriving together are committed together: one transaction per turn of
 * the event loop. Each caller still learns the outcome of its own message, and none
 * is acknowledged before its batch is on disk.
 */
export function createIntake(jobs: JobStore, now: () => number) {
  let waiting: Waiting[] = [];

  function flush(): void {
    const batch = waiting;
    waiting = [];
    try {
      const fresh = jobs.enqueueMany(
        batch.map((w) => w.message),
        now(),
      );
      batch.forEach((w, i) => w.done(fresh[i] ?? false));
    } catch (error) {
      for (const w of batch) w.fail(error);
    }
  }

  return {
    /** Resolves true once committed, false for a messageId seen before; rejects if not stored. */
    enqueue(message: OutboundMessage): Promise<boolean> {
      return new Promise((done, fail) => {
        if (waiting.push({ message, done, fail }) === 1) setImmediate(flush);
      });
    },
  };
}

export type Intake = ReturnType<typeof createIntake>;
