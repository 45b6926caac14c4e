import type { KeyBudgets } from "../../store/contract.ts";
import { keyTag } from "../key-tag.ts";
import type { Logger } from "../log.ts";
import { HOUR_MS, type Scheduler } from "./scheduler.ts";

/** A key's pace: tokens a second, and how many it may send at once. */
export interface KeyRate {
  perSecond: number;
  burst: number;
  /**
   * How many the key's shared row (several servers) lets go at once. Its token is taken
   * before the claim's transaction, whose round trips to the database delay each send by a
   * varying 20-500 ms on a busy machine (docs/PERFORMANCE.md, "Several servers"): sends
   * that left the row evenly paced reach Cast bunched. Half the burst leaves Cast's bucket
   * room for half a second of such delay; the rate is the same.
   */
  sharedBurst: number;
}

/**
 * The pace bridge keeps a Cast key to, a little under CAST_MESSAGES_PER_SECOND: Cast's
 * bucket counts arrivals, which network jitter bunches together, and a 429 costs a second.
 */
export function castKeyRate(messagesPerSecond: number): KeyRate {
  const burst = Math.max(1, Math.ceil(messagesPerSecond) - 1);
  return { perSecond: messagesPerSecond * 0.97, burst, sharedBurst: Math.max(1, Math.floor(burst / 2)) };
}

export interface SendBudgetOptions {
  scheduler: Scheduler;
  /** The store's keys' budgets: taken only where other servers share the store (`shared`). */
  keyBudgets: KeyBudgets;
  rate: KeyRate;
  /** Whether the key has a budget of its own (a phone's): it is not Cast's, nothing is shared. */
  ownBudget: (apiKey: string) => boolean;
  log: Logger;
  /** The caller's clock (the store's own where it has one: PostgreSQL's). */
  now: () => number;
  /**
   * Where servers share the store: whether this server sends through the key now (it
   * holds the key's lease: key-owners.ts). Asked only for keys with a budget of their own.
   */
  owns?: (apiKey: string) => Promise<boolean>;
  /** Whether this server held the key's lease at its last ask, within its time (no store asked). */
  ownsNow?: (apiKey: string) => boolean;
  /**
   * When each message sent through the phone of `apiKey` since `since` was first sent, the
   * oldest first (the store's PhoneJobs.sentSince): the phone's hour so far, which a
   * server starting to send through the phone counts from.
   */
  sentSince?: (apiKey: string, since: number) => Promise<number[]>;
}

/** A phone's message that another server sends through it now is looked at again after this. */
export const OTHER_SENDER_MS = 1_000;

/**
 * A send's budgets, taken together: the scheduler's (this server's address, and the key's
 * in memory) and, where several servers share the store, the key's row there, so that no
 * key exceeds Cast's rate whatever the number of servers (docs/operations.md). The local
 * token is taken first and given back when the key's row has none: a send takes every
 * budget or none. One server alone (SQLite) writes nothing per send.
 *
 * A phone's budget (its pace and its hourly count, a SIM's carrier limits) is kept in the
 * memory of the one server that sends through it: where servers share the store, the
 * holder of the phone key's lease; another server's sends through it wait for that one.
 * Its hourly count starts from the phone's sends of the last hour the store holds, each
 * time a server starts sending through it (its first send after a start, or after
 * another server's turn): neither a restart nor a hand-over starts the phone's hour afresh.
 */
export function createSendBudget(options: SendBudgetOptions) {
  const { scheduler, rate, ownBudget, log, now } = options;
  const shared = options.keyBudgets.shared ? options.keyBudgets : undefined;
  const hours = phoneHours(options);
  /** The key's token from the shared store, after the local ones trySend took: given back when it has none. */
  const takeShared = async (budgets: KeyBudgets, apiKey: string, locationId: string): Promise<number> => {
    let keyWait: number;
    try {
      keyWait = await budgets.take(keyTag(apiKey), rate.perSecond, rate.sharedBurst, now());
    } catch (error) {
      scheduler.giveBack(apiKey, locationId, 0);
      throw error;
    }
    if (keyWait > 0) scheduler.giveBack(apiKey, locationId, keyWait);
    return keyWait;
  };
  return {
    /**
     * 0 when a send with `apiKey` may go now (its tokens taken); else the ms until one may
     * (nothing taken). A number at once where nothing is shared: a Cast key's send on one
     * server waits for no promise, nor does a phone's once its hour is read.
     */
    take(apiKey: string, locationId: string): number | Promise<number> {
      if (!ownBudget(apiKey)) {
        const wait = scheduler.trySend(apiKey, locationId);
        return wait > 0 || !shared ? wait : takeShared(shared, apiKey, locationId);
      }
      return !shared && hours.known(apiKey) ? scheduler.trySend(apiKey, locationId) : takePhone(options, hours, apiKey, locationId);
    },
    /**
     * The tokens `take` gave a send that did not go, given back: another server claimed its
     * job first (both read it due). Without this, servers racing for a key's jobs would
     * spend its rate, and their addresses', on sends none of them made.
     */
    giveBack(apiKey: string, locationId: string): void {
      scheduler.giveBack(apiKey, locationId, 0);
      if (!shared || ownBudget(apiKey)) return;
      shared.giveBack(keyTag(apiKey), rate.sharedBurst, now()).catch((error: unknown) => {
        log.warn(`a key's token of a send that did not go was not given back (its rate waits meanwhile): ${String(error)}`);
      });
    },
    /** The gateway answered 429 on the key: nothing more on it for `ms`, here and, shared, on every server. */
    slowDown(apiKey: string, ms: number): void {
      scheduler.slowDown(apiKey, ms);
      if (!shared || ownBudget(apiKey)) return;
      shared.pause(keyTag(apiKey), ms, now()).catch((error: unknown) => {
        log.warn(`a key's pause after Cast's 429 was not stored (this server still waits): ${String(error)}`);
      });
    },
  };
}

export type SendBudget = ReturnType<typeof createSendBudget>;

/**
 * A phone's tokens, in the memory of the server sending through it (where servers share
 * the store, the holder of the phone key's lease; the others wait for it), once the
 * phone's hour counts the store's record: read again when this server takes the lease anew.
 */
async function takePhone(options: SendBudgetOptions, hours: PhoneHours, apiKey: string, locationId: string): Promise<number> {
  const { owns, scheduler } = options;
  if (options.keyBudgets.shared && owns) {
    const wasSender = options.ownsNow?.(apiKey) ?? false;
    if (!(await owns(apiKey))) return OTHER_SENDER_MS;
    if (!wasSender) hours.forget(apiKey);
  }
  await hours.counted(apiKey);
  return scheduler.trySend(apiKey, locationId);
}

type PhoneHours = ReturnType<typeof phoneHours>;

/**
 * The phones whose hour this server counts from the store's record: read once a server
 * starts sending through a phone, all its sends meanwhile waiting for the one read. A
 * read that fails is logged and the phone's sends go on with this server's own count;
 * the next send reads again.
 */
function phoneHours({ scheduler, log, now, sentSince }: SendBudgetOptions) {
  const known = new Set<string>();
  const reading = new Map<string, Promise<void>>();
  const read = async (apiKey: string): Promise<void> => {
    try {
      scheduler.seedHour(apiKey, await sentSince!(apiKey, now() - HOUR_MS));
      known.add(apiKey);
    } catch (error) {
      log.warn(`a phone's sends of the last hour could not be read (its hourly budget counts this server's only): ${String(error)}`);
    }
  };
  const isKnown = (apiKey: string): boolean => sentSince === undefined || known.has(apiKey);
  return {
    known: isKnown,
    /** Another server may have sent through the phone since: its hour is read again before the next send. */
    forget: (apiKey: string): boolean => known.delete(apiKey),
    /** Resolves once the phone's hour counts the store's record (read now, unless read already): one read a phone at a time. */
    counted(apiKey: string): Promise<void> {
      if (isKnown(apiKey)) return Promise.resolve();
      let pending = reading.get(apiKey);
      if (!pending) reading.set(apiKey, (pending = read(apiKey).finally(() => reading.delete(apiKey))));
      return pending;
    },
  };
}
