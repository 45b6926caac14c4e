import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { errorMessage } from "../../errors.ts";
import type { LeaseStore } from "../../store/contract.ts";
import { wallClock } from "../clock.ts";
import type { Logger } from "../log.ts";

/** An exchange's time limit: the token call's 30 s (src/core/clients/crm.ts) and the agency token's store, with room. */
export const EXCHANGE_LIMIT_MS = 60_000;
/** What an exchange's lease is named after: `exchange:<its id>`. */
const PREFIX = "exchange:";
/** How often a wait looks again for the exchanges of other servers. */
const LOOK_MS = 100;

export type Exchanges = ReturnType<typeof createExchanges>;

export interface ExchangeOptions {
  /** Where exchanges in progress are visible to every server on the database; this process only without it. */
  leases?: Pick<LeaseStore, "take" | "drop" | "list">;
  log?: Logger;
  limitMs?: number;
}

/**
 * OAuth code exchanges in progress. HighLevel may send a location's INSTALL webhook
 * while the agency's own code exchange is still running, on this server or another: the
 * INSTALL waits for it, instead of finding no company token and being lost. Each exchange
 * holds a lease `exchange:<id>` for its time limit (the agency is known only once it
 * answers), dropped when it settles; one whose server died lapses by itself.
 */
export function createExchanges(options: ExchangeOptions = {}) {
  const { leases, log } = options;
  const limitMs = options.limitMs ?? EXCHANGE_LIMIT_MS;
  const holder = randomBytes(8).toString("hex");
  const running = new Set<Promise<unknown>>();
  const warn = (what: string) => (error: unknown) => log?.warn(`installs: cannot ${what} the code exchange in progress for other servers: ${errorMessage(error)}`);

  /** The exchanges of other servers in progress now; 0 when they cannot be read. */
  async function elsewhere(): Promise<number> {
    if (!leases) return 0;
    const all = await leases.list().catch((error: unknown) => (warn("read")(error), []));
    return all.filter((l) => l.name.startsWith(PREFIX) && l.holder !== holder && l.leftMs > 0).length;
  }

  return {
    /** Runs `fn` as an exchange in progress until it settles. */
    async track<T>(fn: () => Promise<T>): Promise<T> {
      const name = `${PREFIX}${randomBytes(6).toString("hex")}`;
      await leases?.take(name, holder, limitMs).catch(warn("record"));
      const started = fn();
      running.add(started);
      try {
        return await started;
      } finally {
        running.delete(started);
        await leases?.drop(name, holder).catch(warn("end"));
      }
    },
    /** Exchanges in progress, here and on the other servers. */
    async active(): Promise<number> {
      return running.size + (await elsewhere());
    },
    /** Resolves true once no exchange is in progress anywhere, false if some still are after `maxMs`. */
    async settled(maxMs: number): Promise<boolean> {
      const end = wallClock() + maxMs;
      for (;;) {
        const remote = running.size === 0 ? await elsewhere() : 0;
        if (running.size === 0 && remote === 0) return true;
        const left = end - wallClock();
        if (left <= 0) return false;
        const timer = new AbortController();
        const wait = delay(running.size > 0 ? left : Math.min(left, LOOK_MS), undefined, { signal: timer.signal }).catch(() => {});
        await Promise.race([running.size > 0 ? Promise.allSettled([...running]) : wait, wait]);
        timer.abort();
      }
    },
  };
}
