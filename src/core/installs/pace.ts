import { wallClock } from "../clock.ts";
import { sleep } from "../retry.ts";

export type Pacer = () => Promise<void>;

/**
 * Lets callers through one at a time, at least `gapMs` apart, across every caller that
 * shares it: HighLevel allows 100 requests per 10 s per resource, and a bulk install,
 * INSTALL webhooks and a reconciliation may all be fetching location tokens at once.
 * The gap counts from when the previous caller was let through, so a late timer never
 * bunches two calls together.
 */
export function createPacer(gapMs: number): Pacer {
  let last = -Infinity;
  let queue = Promise.resolve();
  return () => {
    const turn = queue.then(async () => {
      const wait = last + gapMs - wallClock();
      if (wait > 0) await sleep(wait);
      last = wallClock();
    });
    queue = turn;
    return turn;
  };
}
