import type { JobStore } from "../../store/contract.ts";
import type { Job } from "../../store/types.ts";
import type { Logger } from "../log.ts";
import type { Turn } from "./send-order.ts";
import type { PrunerOptions } from "./prune.ts";

/** What the worker (worker.ts) and its filler (worker-fill.ts) run with. */
export interface WorkerOptions {
  jobs: JobStore;
  /**
   * Handles a job; a number: the ms until it may run again (it waits for a budget, not a
   * failure). A queued job comes with its turn in its location's line (send-order.ts).
   */
  run: (job: Job, turn?: Turn) => Promise<number | void>;
  /** When a location last got a send slot: the one served longest ago goes first (fair turns). */
  lastServed?: (locationId: string) => number;
  /** Before this time a location's queued job would only be told to wait: not started. */
  readyAt?: (locationId: string) => number;
  now: () => number;
  log: Logger;
  /**
   * Servers sharing the store (run.ts): each look reads this many times the due jobs it could
   * start, and starts each location's from a random one of them on, so that servers reading
   * the same queue start different jobs instead of racing for the same claims (only one claim
   * wins; the others' work is lost). 1, the default: each location's earliest first, in the
   * order they came. Asked at each look: a server alone on the store keeps the order.
   */
  spread?: () => number;
  /**
   * Whether this server may start sends now (servers.ts, `claims`: its heartbeat is
   * stored); while not, only reports and receipts run. Default: always.
   */
  claims?: () => boolean;
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
  /**
   * A send a crash caught is sent again at start only within its gateway's idempotency
   * window of its first attempt, by gateway kind (recovery.ts). A kind absent: none of it is.
   */
  resendWindows?: Readonly<Record<string, number>>;
  /**
   * Whether start recovers every send a crash caught (default true): one server on its
   * own database. Servers sharing one leave it to the leader's rescuer (run.ts), which
   * takes only the sends of servers whose heartbeat stopped.
   */
  recoverAtStart?: boolean;
  /** Replies (their finished ones pruned with the finished jobs). */
  replies?: PrunerOptions["replies"];
  /** Whether this server leads the periodic work (pruning): always when not given. */
  leads?: PrunerOptions["leads"];
  /** The settings page's sessions (the expired ones pruned with the finished jobs). */
  appSessions?: PrunerOptions["appSessions"];
  /** Cast's stored unsubscribed lists (the ones no send reads any more pruned with the finished jobs). */
  unsubscribed?: PrunerOptions["unsubscribed"];
}
