/**
 * Lets at most `concurrent` holders in at once; up to `queue` more wait their turn,
 * each for at most `maxWaitMs`. `enter` resolves with the function that lets the
 * holder out again, or with undefined when the queue is full or the wait ran out:
 * under a flood, a bounded number work, a bounded number wait, the rest are told no
 * at once instead of piling up.
 */
export function createGate(options: { concurrent: number; queue: number; maxWaitMs: number }) {
  const { concurrent, queue, maxWaitMs } = options;
  let inside = 0;
  /** Wake-up calls of the waiting, oldest first (a Set keeps insertion order). */
  const waiting = new Set<() => void>();

  function admit(): () => void {
    inside++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      inside--;
      const next = waiting.values().next();
      if (!next.done) {
        waiting.delete(next.value);
        next.value();
      }
    };
  }

  return {
    get inside() {
      return inside;
    },
    get waiting() {
      return waiting.size;
    },
    enter(): Promise<(() => void) | undefined> {
      if (inside < concurrent) return Promise.resolve(admit());
      if (waiting.size >= queue) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(admit());
        };
        const timer = setTimeout(() => {
          waiting.delete(wake);
          resolve(undefined);
        }, maxWaitMs);
        waiting.add(wake);
      });
    },
  };
}

export type Gate = ReturnType<typeof createGate>;
