import { sleep } from "./retry.ts";

export type Pacer = () => Promise<void>;

/**
 * Spaces calls at least `gapMs` apart, across every caller that shares it: HighLevel
 * allows 100 requests per 10 s per resource, and a bulk install, INSTALL webhooks and
 * a reconciliation may all be fetching location tokens at once. Slots are handed out
 * in call order.
 */
export function createPacer(gapMs: number): Pacer {
  let next = 0;
  return async () => {
    const now = Date.now();
    const at = Math.max(now, next);
    next = at + gapMs;
    if (at > now) await sleep(at - now);
  };
}
