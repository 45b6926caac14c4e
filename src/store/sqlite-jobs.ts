import type { Commit } from "../db/commit.ts";
import type { GatewayKeys } from "../db/gateway-keys.ts";
import type { Db } from "../db/index.ts";
import { createJobStore } from "../db/jobs.ts";
import { createMessageLog } from "../db/messages.ts";
import type { MonthOf } from "../db/usage-month.ts";
import type { EnqueueLimit, JobStore } from "./contract.ts";
import { facade } from "./facade.ts";

type Composed = "enqueue" | "enqueueLimited" | "claimForSending";

// A job's moves share commits; the queue's own upkeep (a held key woken, recovery, pruning) commits at once.
const WRITES = {
  batched: [
    "noteError", "sendLater", "sendAgain", "recordResult", "markHeld", "receiptLater", "sentByPhone", "receiptsDue",
    "recordReceipt", "takeReport", "reported", "giveUp", "retryLater",
  ],
  alone: ["wakeHeld", "recoverInterrupted", "prune"],
} as const;

/** The job store over SQLite (src/db/jobs.ts); the writes core once composed are one method each here. */
export function sqliteJobs(db: Db, commit: Commit, keys: Pick<GatewayKeys, "keep">, monthOf: MonthOf): JobStore {
  const sync = createJobStore(db, monthOf);
  const messages = createMessageLog(db);
  return {
    ...facade<Omit<JobStore, Composed>>(sync, commit, WRITES),
    enqueue: (message, now, alone = false) => commit(() => sync.enqueue(message, now), alone),
    // Counted and added in one commit, at once: neither a restart nor two pages at once let one more through.
    enqueueLimited: (message, now, limit) =>
      commit(() => {
        const wait = limitWait(messages.receivedSince(message.locationId, now - limit.windowMs, limit.prefix), limit, now);
        if (wait !== undefined) return wait;
        sync.enqueue(message, now);
        return 0;
      }, true),
    claimForSending: (id, now, claim, key) =>
      commit(() => {
        if (claim && key) keys.keep(claim.apiKeyTag, key.masked, key.apiKey);
        return sync.claimForSending(id, now, claim);
      }),
  };
}

/** The ms until one more message may go under `limit`, given when the recent ones were received (oldest first); undefined: it may now. */
export function limitWait(recent: number[], limit: EnqueueLimit, now: number): number | undefined {
  const oldest = recent[recent.length - limit.count];
  return oldest === undefined ? undefined : oldest + limit.windowMs - now;
}
