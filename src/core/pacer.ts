/**
 * Client-side pacing per key (a gateway API key): a token bucket that mirrors the
 * gateway's own limit, so we wait our turn instead of collecting 429s. `delay`
 * reserves a slot and says how long to wait for it.
 */
export function createPacer(options: { perSecond: number; burst: number; now?: () => number }) {
  const { perSecond, burst } = options;
  const now = options.now ?? Date.now;
  const buckets = new Map<string, { tokens: number; at: number }>();

  return {
    /** Milliseconds until the reserved slot for `key` comes up (0: go now). */
    delay(key: string): number {
      const t = now();
      const bucket = buckets.get(key) ?? { tokens: burst, at: t };
      bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) * perSecond) / 1000) - 1;
      bucket.at = t;
      buckets.set(key, bucket);
      return bucket.tokens >= 0 ? 0 : Math.ceil((-bucket.tokens * 1000) / perSecond);
    },
  };
}

export type Pacer = ReturnType<typeof createPacer>;
