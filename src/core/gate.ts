export interface GateOptions {
  concurrent: number;
  queue: number;
  maxWaitMs: number;
  /**
   * Each client's share: at most this many of one client's holders inside and waiting
   * (default: the whole gate), so one client alone cannot fill it and keep others out.
   */
  perClient?: { concurrent: number; queue: number };
}

/**
 * Lets at most `concurrent` holders in at once; up to `queue` more wait their turn,
 * each for at most `maxWaitMs`. `enter` resolves with the function that lets the
 * holder out again, or with undefined when the queue is full or the wait ran out:
 * under a flood, a bounded number work, a bounded number wait, the rest are told no
 * at once instead of piling up. With `perClient`, the same holds for each client
 * (named by `enter`'s argument) within the whole: a freed place goes to the oldest
 * waiter whose client is under its share.
 */
export function createGate(options: GateOptions) {
  const { concurrent, queue, maxWaitMs } = options;
  const share = options.perClient ?? { concurrent, queue };
  const inside = createCounts();
  /** The waiting, oldest first (a Set keeps insertion order). */
  const waiting = new Set<{ client: string; wake: () => void }>();
  const waitingOf = createCounts();

  const mayEnter = (client: string) => inside.total < concurrent && inside.of(client) < share.concurrent;

  function admit(client: string): () => void {
    inside.add(client, 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      inside.add(client, -1);
      for (const waiter of waiting) {
        if (!mayEnter(waiter.client)) continue;
        waiting.delete(waiter);
        waitingOf.add(waiter.client, -1);
        waiter.wake();
        return;
      }
    };
  }

  return {
    get inside() {
      return inside.total;
    },
    get waiting() {
      return waiting.size;
    },
    enter(client = ""): Promise<(() => void) | undefined> {
      if (mayEnter(client)) return Promise.resolve(admit(client));
      if (waiting.size >= queue || waitingOf.of(client) >= share.queue) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const waiter = {
          client,
          wake: () => {
            clearTimeout(timer);
            resolve(admit(client));
          },
        };
        const timer = setTimeout(() => {
          waiting.delete(waiter);
          waitingOf.add(client, -1);
          resolve(undefined);
        }, maxWaitMs);
        waiting.add(waiter);
        waitingOf.add(client, 1);
      });
    },
  };
}

export type Gate = ReturnType<typeof createGate>;

/** A count per client and in all; a client counted down to zero is forgotten. */
function createCounts() {
  const byClient = new Map<string, number>();
  let total = 0;
  return {
    get total() {
      return total;
    },
    of: (client: string) => byClient.get(client) ?? 0,
    add(client: string, n: number): void {
      total += n;
      const count = (byClient.get(client) ?? 0) + n;
      if (count === 0) byClient.delete(client);
      else byClient.set(client, count);
    },
  };
}
