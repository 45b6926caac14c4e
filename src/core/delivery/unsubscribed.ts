import { errorMessage } from "../../errors.ts";
import type { StoredUnsubscribed, UnsubscribedStore } from "../../store/contract.ts";
import type { ReadUnsubscribed, Unsubscribed } from "../clients/cast-unsubscribed.ts";
import { optOutKey } from "../opt-out-list.ts";
import type { Logger } from "../log.ts";
import { maskSecret } from "../mask.ts";
import { sleep } from "../retry.ts";

/**
 * How long a key's copy of Cast's unsubscribed list is used before it is read again.
 * Cast itself blocks a send from a sender ID to a number that unsubscribed from it (its
 * docs, "Generate Unsubscribe Link"): a copy minutes old costs no unwanted SMS, only a
 * clear "recipient opted out" a little later. Each read is one request of Cast's
 * per-address budget (30 a second, shared with every send and poll): one per key every
 * five minutes is nothing to it.
 */
export const UNSUBSCRIBED_FRESH_MS = 5 * 60_000;
/** After a failed read the key's messages go without the list (Cast still blocks) until this has passed. */
export const UNSUBSCRIBED_RETRY_MS = 60_000;
/** While a key's first read is under way, its messages look again this often. */
export const UNSUBSCRIBED_LOOK_MS = 100;
/** A server that does not own the key looks at the stored list again this often once it is due. */
export const UNSUBSCRIBED_STORED_LOOK_MS = 10_000;
/** ... and this often while none is stored yet (another server's first read under way). */
const FIRST_STORED_LOOK_MS = 1_000;

/** Cast's unsubscribed lists, one per API key (its account), kept a while. */
export interface UnsubscribedLists {
  /**
   * Whether `phone` unsubscribed from `senderId` on the key's account. "" (the account's
   * default sender ID, which bridge does not know): from any of its sender IDs. False
   * when the list cannot be read: a failed read never stops a send.
   */
  listed(apiKey: string, senderId: string, phone: string): Promise<boolean>;
  /**
   * `listed` without waiting: a number, the key's list is being read (its first read, off
   * the caller's path) and this is the ms to look again; a send holds no worker meanwhile.
   */
  check(apiKey: string, senderId: string, phone: string): boolean | number;
}

/**
 * Servers sharing a store: a key's list due again is read by one server at a time, which
 * claims the read (a lease with a time limit) and stores what it found; every server's
 * sends check the stored copy, so one request a key every 5 minutes serves them all.
 */
export interface SharedLists {
  store: UnsubscribedStore;
  tagOf: (apiKey: string) => string;
  /** Whether this server reads the key's list now: false while another server reads it. */
  claim: (apiKey: string) => Promise<boolean>;
  /** The claimed read is over (stored): another server may claim the next at once. */
  release: (apiKey: string) => Promise<void>;
}

export interface UnsubscribedDeps {
  read: ReadUnsubscribed;
  /** 0 when a read may go now (a request of Cast's per-address budget taken); else the ms to wait (Scheduler.tryPoll). */
  tryRead?: () => number;
  log: Logger;
  now: () => number;
  freshMs?: number;
  retryMs?: number;
  /** Absent: this process reads every key's list itself (a test's lists). */
  shared?: SharedLists;
}

/** Each unsubscribed number (keyed as the opt-out lists are) and the sender IDs, upper case, it left. */
type Numbers = Map<string, Set<string>>;

export function createUnsubscribedLists(deps: UnsubscribedDeps): UnsubscribedLists {
  const lists = createCopies(deps);
  return {
    async listed(apiKey, senderId, phone) {
      return on(await lists.current(apiKey), senderId, phone);
    },
    check(apiKey, senderId, phone) {
      // A list due again is read again meanwhile; until then its last copy serves.
      void lists.current(apiKey);
      return lists.found.has(apiKey) ? on(lists.found.get(apiKey), senderId, phone) : UNSUBSCRIBED_LOOK_MS;
    },
  };
}

/** Each key's copy: read from Cast by this server, or from the store (another server's read). */
function createCopies(deps: UnsubscribedDeps) {
  // One look per key at a time: the sends that wait for it share it.
  const kept = new Map<string, { until: number; numbers: Promise<Numbers | undefined> }>();
  // What each key's last look found, for `check` (a key absent: nothing read yet).
  const found = new Map<string, Numbers | undefined>();
  const copies: Copies = {
    found,
    keep(apiKey, numbers, forMs) {
      kept.set(apiKey, { until: deps.now() + forMs, numbers: Promise.resolve(numbers) });
      found.set(apiKey, numbers);
      return numbers;
    },
    lookAgain(apiKey, inMs) {
      kept.set(apiKey, { until: deps.now() + inMs, numbers: Promise.resolve(undefined) });
    },
  };
  const read = castReads(deps, copies);
  const look = deps.shared ? storedLooks(deps, deps.shared, copies, read) : read;
  return {
    found,
    current(apiKey: string): Promise<Numbers | undefined> {
      const copy = kept.get(apiKey);
      if (copy && copy.until > deps.now()) return copy.numbers;
      const numbers = look(apiKey);
      kept.set(apiKey, { until: Number.POSITIVE_INFINITY, numbers });
      return numbers;
    },
  };
}

interface Copies {
  found: Map<string, Numbers | undefined>;
  /** Keeps `numbers` as the key's copy for `forMs` (undefined: go without the list). */
  keep(apiKey: string, numbers: Numbers | undefined, forMs: number): Numbers | undefined;
  /** Nothing to go by yet: the key's sends wait, and the next look goes in `inMs`. */
  lookAgain(apiKey: string, inMs: number): void;
}

/** This server's reads of Cast's list, each stored for the other servers. */
function castReads(deps: UnsubscribedDeps, copies: Copies) {
  const freshMs = deps.freshMs ?? UNSUBSCRIBED_FRESH_MS;
  const retryMs = deps.retryMs ?? UNSUBSCRIBED_RETRY_MS;
  // Keys whose last read failed: the failure is logged once, not at every send.
  const failing = new Set<string>();

  async function store(apiKey: string, entries: Unsubscribed[] | null): Promise<void> {
    await deps.shared?.store.put(deps.shared.tagOf(apiKey), entries).catch((error: unknown) => {
      deps.log.warn(`Cast's unsubscribed list of key ${maskSecret(apiKey)} could not be stored for the other servers: ${errorMessage(error)}`);
    });
  }

  return async (apiKey: string): Promise<Numbers | undefined> => {
    try {
      // A read spends Cast's per-address budget like a receipt poll: it waits its turn.
      for (let wait = deps.tryRead?.() ?? 0; wait > 0; wait = deps.tryRead?.() ?? 0) await sleep(wait);
      const entries = await deps.read(apiKey);
      if (failing.delete(apiKey)) deps.log.info(`Cast's unsubscribed list of key ${maskSecret(apiKey)} is read again`);
      await store(apiKey, entries);
      return copies.keep(apiKey, byNumber(entries), freshMs);
    } catch (error) {
      const log = failing.has(apiKey) ? deps.log.debug : deps.log.warn;
      failing.add(apiKey);
      log(`Cast's unsubscribed list of key ${maskSecret(apiKey)} could not be read (${errorMessage(error)}): its messages go without it (Cast blocks the numbers on it itself); read again in ${retryMs / 1000} s`);
      await store(apiKey, null);
      return copies.keep(apiKey, undefined, retryMs);
    }
  };
}

/** The stored copy while it is fresh; else Cast's list read here when this server claims the read, the last stored copy if another does. */
function storedLooks(deps: UnsubscribedDeps, shared: SharedLists, copies: Copies, read: (apiKey: string) => Promise<Numbers | undefined>) {
  const freshMs = deps.freshMs ?? UNSUBSCRIBED_FRESH_MS;
  const retryMs = deps.retryMs ?? UNSUBSCRIBED_RETRY_MS;
  // Keys another server reads, none stored yet: since when their sends wait for its first read.
  const awaiting = new Map<string, number>();

  /** Another server reads the key's list and has stored none yet: its sends wait for it a minute at most. */
  function awaitReader(apiKey: string): Numbers | undefined {
    const since = awaiting.get(apiKey) ?? deps.now();
    awaiting.set(apiKey, since);
    if (deps.now() - since < retryMs) return void copies.lookAgain(apiKey, FIRST_STORED_LOOK_MS);
    if (!copies.found.has(apiKey)) deps.log.warn(`Cast's unsubscribed list of key ${maskSecret(apiKey)} has not been stored by the server reading it: its messages go without it (Cast blocks the numbers on it itself)`);
    return copies.keep(apiKey, undefined, FIRST_STORED_LOOK_MS);
  }

  async function storedCopy(apiKey: string): Promise<StoredUnsubscribed | undefined> {
    const stored = await shared.store.get(shared.tagOf(apiKey)).catch((error: unknown) => {
      deps.log.debug(`Cast's unsubscribed list of key ${maskSecret(apiKey)}: the stored copy cannot be read (${errorMessage(error)})`);
      return undefined;
    });
    if (stored) awaiting.delete(apiKey);
    return stored;
  }
  const lastsMs = (stored: StoredUnsubscribed | undefined) => (stored ? (stored.entries ? freshMs : retryMs) - stored.ageMs : 0);
  const keep = (apiKey: string, stored: StoredUnsubscribed, forMs: number) => copies.keep(apiKey, stored.entries ? byNumber(stored.entries) : undefined, forMs);

  return async (apiKey: string): Promise<Numbers | undefined> => {
    let stored = await storedCopy(apiKey);
    if (stored && lastsMs(stored) > 0) return keep(apiKey, stored, lastsMs(stored));
    if (await shared.claim(apiKey)) {
      try {
        // Another server's read may have been stored since the look above.
        stored = await storedCopy(apiKey);
        return stored && lastsMs(stored) > 0 ? keep(apiKey, stored, lastsMs(stored)) : await read(apiKey);
      } finally {
        await shared.release(apiKey).catch(() => undefined);
      }
    }
    if (stored) return keep(apiKey, stored, UNSUBSCRIBED_STORED_LOOK_MS);
    return awaitReader(apiKey);
  };
}

function on(numbers: Numbers | undefined, senderId: string, phone: string): boolean {
  const senders = numbers?.get(optOutKey(phone));
  if (!senders) return false;
  return senderId === "" || senders.has(senderId.toUpperCase());
}

function byNumber(entries: Unsubscribed[]): Numbers {
  const numbers: Numbers = new Map();
  for (const { phone, senderId } of entries) {
    const key = optOutKey(phone);
    numbers.set(key, (numbers.get(key) ?? new Set()).add(senderId.toUpperCase()));
  }
  return numbers;
}
