/** How long a location told to wait for a key keeps its claim on the key's next token. */
const WAITING_MS = 1000;

/**
 * Whose turn a key's next token is while the key's budget binds (docs/architecture.md,
 * "Pacing and fair turns"). A location told to wait for the key is remembered for a
 * second; a send that would take the key's last token leaves it to such a location served
 * longer ago. The queue starts each turn's jobs in order, but where the store answers
 * asynchronously (PostgreSQL) they reach the budget in no particular order: without this,
 * a bulk campaign's many jobs would win most tokens from another location's one message.
 */
export function createKeyTurns(lastServed: (locationId: string) => number) {
  /** Per key, the locations told to wait for it, and when. */
  const waiting = new Map<string, Map<string, number>>();
  return {
    /** The location's send was told to wait (for this key's budget or the address's). */
    waited(apiKey: string, locationId: string, t: number): void {
      (waiting.get(apiKey) ?? waiting.set(apiKey, new Map()).get(apiKey)!).set(locationId, t);
    },
    /** Whether a send of `locationId` leaves the key's last token to a location waiting for its turn. */
    yields(apiKey: string, locationId: string, t: number): boolean {
      const waiters = waiting.get(apiKey);
      if (!waiters) return false;
      const mine = lastServed(locationId);
      let yields = false;
      for (const [other, at] of waiters) {
        if (t - at > WAITING_MS) waiters.delete(other);
        else if (other !== locationId && lastServed(other) < mine) yields = true;
      }
      if (waiters.size === 0) waiting.delete(apiKey);
      return yields;
    },
    /** The location's send took the key's token: it waits no more. */
    took(apiKey: string, locationId: string): void {
      const waiters = waiting.get(apiKey);
      waiters?.delete(locationId);
      if (waiters?.size === 0) waiting.delete(apiKey);
    },
  };
}
