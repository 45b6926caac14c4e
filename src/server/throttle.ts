/**
 * Counts failures per key (a client address) in a sliding window; past `limit`
 * the key is refused until its oldest failure leaves the window.
 */
export function createFailureThrottle(options: { limit: number; windowMs: number; now: () => number; maxKeys?: number }) {
  const { limit, windowMs, now } = options;
  const maxKeys = options.maxKeys ?? 10_000;
  const failures = new Map<string, number[]>();

  function recent(key: string): number[] {
    const since = now() - windowMs;
    const times = (failures.get(key) ?? []).filter((t) => t > since);
    if (times.length) failures.set(key, times);
    else failures.delete(key);
    return times;
  }

  return {
    /** Milliseconds until `key` may try again; 0 when it may now. */
    blockedFor(key: string): number {
      const times = recent(key);
      return times.length >= limit ? (times[0] ?? 0) + windowMs - now() : 0;
    },
    /** Records a failure; returns how many `key` now has in the window. */
    fail(key: string): number {
      const times = recent(key);
      // Bounded memory under a flood of addresses: forget the oldest key.
      if (!failures.has(key) && failures.size >= maxKeys) failures.delete(failures.keys().next().value ?? "");
      failures.set(key, [...times, now()]);
      return times.length + 1;
    },
  };
}

export type FailureThrottle = ReturnType<typeof createFailureThrottle>;
