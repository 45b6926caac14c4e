import { wallClock } from "../clock.ts";
import { setTimeout as delay } from "node:timers/promises";

export type Exchanges = ReturnType<typeof createExchanges>;

/**
 * OAuth code exchanges in progress in this process. HighLevel may send a location's
 * INSTALL webhook while the agency's own code exchange is still running: the INSTALL
 * waits here for it, instead of finding no company token and being lost.
 */
export function createExchanges() {
  const running = new Set<Promise<unknown>>();
  return {
    /** Runs `fn` as an exchange in progress until it settles. */
    async track<T>(fn: () => Promise<T>): Promise<T> {
      const started = fn();
      running.add(started);
      try {
        return await started;
      } finally {
        running.delete(started);
      }
    },
    get active(): number {
      return running.size;
    },
    /** Resolves true once no exchange is in progress, false if some still are after `maxMs`. */
    async settled(maxMs: number): Promise<boolean> {
      const end = wallClock() + maxMs;
      while (running.size > 0) {
        const left = end - wallClock();
        if (left <= 0) return false;
        const timer = new AbortController();
        await Promise.race([Promise.allSettled([...running]), delay(left, undefined, { signal: timer.signal }).catch(() => {})]);
        timer.abort();
      }
      return true;
    },
  };
}
