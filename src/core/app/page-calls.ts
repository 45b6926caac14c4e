import { AppError } from "../../errors.ts";

/** How long an answer the page asked Cast or a phone for is shown before it is asked again. */
export const PAGE_CACHE_MS = 60_000;
/** A failure is kept shorter: the page should see a mended key or phone soon. */
const FAILED_MS = 10_000;
/** How long a page's call waits for the budget before it is told to come again. */
const WAIT_MS = 2000;
/** Answers kept at once; beyond it the oldest goes (each is one key's or one phone's). */
const MAX_KEPT = 10_000;

export interface PageCallsOptions {
  /** The scheduler's lowest priority (scheduler.ts): 0 when a call may go now, else the ms to wait. */
  tryLowest: (budgetKey?: string) => number;
  now: () => number;
  ttlMs?: number;
}

export type PageCalls = ReturnType<typeof createPageCalls>;

/**
 * Every call the settings page makes at Cast or a phone goes through here: one answer per
 * name (a key's sender IDs, its balance, a phone's health) kept PAGE_CACHE_MS and shared
 * by every caller meanwhile, and a new one asked only at the scheduler's lowest priority.
 * However many pages ask, a name costs one remote call a minute, and the sends keep
 * their budget: no page user can slow another tenant's messages.
 */
export function createPageCalls(options: PageCallsOptions) {
  const { tryLowest, now } = options;
  const ttlMs = options.ttlMs ?? PAGE_CACHE_MS;
  const kept = new Map<string, { at: number; failed: boolean; value: Promise<unknown> }>();

  function fresh(name: string): Promise<unknown> | undefined {
    const entry = kept.get(name);
    if (entry && now() - entry.at < (entry.failed ? FAILED_MS : ttlMs)) return entry.value;
    kept.delete(name);
    return undefined;
  }

  return {
    /** `call`'s answer under `name`, kept or asked anew; `budgetKey`: a phone's key, whose budget it waits on (Cast's: none). */
    cached<T>(name: string, call: () => Promise<T>, budgetKey?: string): Promise<T> {
      const hit = fresh(name);
      if (hit) return hit as Promise<T>;
      const value = turn(tryLowest, budgetKey).then(call);
      const entry = { at: now(), failed: false, value };
      if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value ?? "");
      kept.set(name, entry);
      value.then(
        () => (entry.at = now()),
        (error: unknown) => {
          // No turn: nothing was asked, so nothing is kept; the next caller tries again.
          if (error instanceof AppError && error.code === "BUSY" && kept.get(name) === entry) kept.delete(name);
          Object.assign(entry, { at: now(), failed: true });
        },
      );
      return value;
    },
    /** Forgets what is kept under `name` (a key just changed). */
    forget(name: string): void {
      kept.delete(name);
    },
  };
}

/** Waits up to WAIT_MS for the lowest priority's turn; then "try again shortly" (BUSY, 503). */
async function turn(tryLowest: PageCallsOptions["tryLowest"], budgetKey: string | undefined): Promise<void> {
  let waited = 0;
  for (let wait = tryLowest(budgetKey); wait > 0; wait = tryLowest(budgetKey)) {
    if (waited + wait > WAIT_MS) {
      throw new AppError("BUSY", "the SMS gateway is busy sending messages: try again shortly", { retryAfterMs: Math.max(1000, wait) });
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
    waited += wait;
  }
}
