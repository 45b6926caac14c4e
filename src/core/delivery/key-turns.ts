/** How long a location told to wait for a key keeps its claim on the key's next token. */
const WAITING_MS = 1000;

/**
 * Whose turn a send slot is (docs/architecture.md, "Pacing and fair turns"): when each
 * location was last served, so that the queue serves the one served longest ago first,
 * and, while a key's budget binds, whose turn the key's next token is. A location told to
 * wait for the key is remembered for a second; a send that would take the key's last
 * token leaves it to such a location served longer ago. The queue starts each turn's jobs
 * in order, but where the store answers asynchronously (PostgreSQL) they reach the budget
 * in no particular order: without this, a bulk campaign's many jobs would win most tokens
 * from another location's one message.
 */
export function createTurns() {
  const served = new Map<string, number>();
  // When each location was served before its last send: restored if its tokens are given back.
  const servedBefore = new Map<string, number | undefined>();
  /** Per key, the locations told to wait for it, and when. */
  const waiting = new Map<string, Map<string, number>>();
  const lastServed = (locationId: string): number => served.get(locationId) ?? 0;
  const waited = (apiKey: string, locationId: string, t: number): void => {
    (waiting.get(apiKey) ?? waiting.set(apiKey, new Map()).get(apiKey)!).set(locationId, t);
  };
  return {
    /** When the location last got a send slot (0: never). */
    lastServed,
    /** The location's send was told to wait (for this key's budget or the address's). */
    waited,
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
    /** The location's send took the key's token: served now, it waits no more. */
    took(apiKey: string, locationId: string, t: number): void {
      servedBefore.set(locationId, served.get(locationId));
      served.set(locationId, t);
      const waiters = waiting.get(apiKey);
      waiters?.delete(locationId);
      if (waiters?.size === 0) waiting.delete(apiKey);
    },
    /** Its tokens were given back: not served after all; still waiting when it is told to wait (`waits`). */
    givenBack(apiKey: string, locationId: string, t: number, waits: boolean): void {
      const before = servedBefore.get(locationId);
      if (before !== undefined) served.set(locationId, before);
      else if (servedBefore.has(locationId)) served.delete(locationId);
      if (waits) waited(apiKey, locationId, t);
    },
  };
}
