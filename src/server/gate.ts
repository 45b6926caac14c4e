export interface Share {
  concurrent: number;
  queue: number;
}

export interface GateOptions {
  concurrent: number;
  queue: number;
  maxWaitMs: number;
  /**
   * The shares, one per level of client: `enter(keys)` names the holder's client at
   * each level (e.g. an address, then its network), and at most `shares[i]` of the
   * holders with the same `keys[i]` are inside and waiting, so one client (or one
   * network) alone cannot fill the gate and keep others out. A level the holder names
   * no key for does not limit it.
   */
  shares?: readonly Share[];
}

/**
 * Lets at most `concurrent` holders in at once; up to `queue` more wait their turn,
 * each for at most `maxWaitMs`. `enter` resolves with the function that lets the
 * holder out again, or with undefined when the queue is full or the wait ran out:
 * under a flood, a bounded number work, a bounded number wait, the rest are told no
 * at once instead of piling up. With `shares`, the same holds for each client at each
 * level within the whole: a freed place goes to the oldest waiter whose clients are
 * all under their share.
 */
export function createGate(options: GateOptions) {
  const { concurrent, queue, maxWaitMs } = options;
  const shares = createShares(options.shares ?? []);
  const count = shares.count;
  let insideTotal = 0;
  /** The waiting, oldest first (a Set keeps insertion order). */
  const waiting = new Set<{ keys: readonly string[]; wake: () => void }>();
  const mayEnter = (keys: readonly string[]) => insideTotal < concurrent && shares.allow(keys, "inside");
  const mayWait = (keys: readonly string[]) => waiting.size < queue && shares.allow(keys, "waiting");

  function admit(keys: readonly string[]): () => void {
    insideTotal++;
    count(keys, "inside", 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      insideTotal--;
      count(keys, "inside", -1);
      for (const waiter of waiting) {
        if (!mayEnter(waiter.keys)) continue;
        waiting.delete(waiter);
        count(waiter.keys, "waiting", -1);
        waiter.wake();
        return;
      }
    };
  }

  return {
    get inside() {
      return insideTotal;
    },
    get waiting() {
      return waiting.size;
    },
    enter(keys: readonly string[] = []): Promise<(() => void) | undefined> {
      if (mayEnter(keys)) return Promise.resolve(admit(keys));
      if (!mayWait(keys)) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const waiter = {
          keys,
          wake: () => {
            clearTimeout(timer);
            resolve(admit(keys));
          },
        };
        const timer = setTimeout(() => {
          waiting.delete(waiter);
          count(keys, "waiting", -1);
          resolve(undefined);
        }, maxWaitMs);
        waiting.add(waiter);
        count(keys, "waiting", 1);
      });
    },
  };
}

export type Gate = ReturnType<typeof createGate>;

type Where = "inside" | "waiting";

/** The holders of each client at each level of `shares`, inside and waiting. */
function createShares(shares: readonly Share[]) {
  const levels = shares.map((share) => ({ share, inside: createCounts(), waiting: createCounts() }));
  /** Each level the holder names a key for, with that key. */
  const named = (keys: readonly string[]) =>
    levels.flatMap((level, i) => {
      const key = keys[i];
      return key === undefined ? [] : [{ level, key }];
    });
  const limit = (share: Share, where: Where) => (where === "inside" ? share.concurrent : share.queue);
  return {
    /** Whether one more holder of these clients may be `where`: each is under its share at its level. */
    allow: (keys: readonly string[], where: Where) => named(keys).every(({ level, key }) => level[where].of(key) < limit(level.share, where)),
    count(keys: readonly string[], where: Where, n: number): void {
      for (const { level, key } of named(keys)) level[where].add(key, n);
    },
  };
}

/** A count per client; a client counted down to zero is forgotten. */
function createCounts() {
  const byClient = new Map<string, number>();
  return {
    of: (client: string) => byClient.get(client) ?? 0,
    add(client: string, n: number): void {
      const count = (byClient.get(client) ?? 0) + n;
      if (count === 0) byClient.delete(client);
      else byClient.set(client, count);
    },
  };
}
