/** A job's place in its location's line (createSendOrder): its budgets are taken once `turn` resolves; `pass` lets the next one on. */
export interface Turn {
  turn: Promise<void>;
  pass: () => void;
}

/**
 * A location's sends take their budgets in the order the queue started them (its due
 * jobs, oldest first), whatever order their reads of the store end in: on SQLite they end
 * at once, in order; on PostgreSQL each is a round trip, and without this a location's
 * third message could take the key's (or a phone's hourly) last token before its first.
 * The reads still run side by side; only the budgets are taken one after another. A
 * job's turn comes once every job started before it in its location has passed.
 */
export function createSendOrder() {
  const last = new Map<string, Promise<void>>();
  return {
    /** Called in start order: the started job's turn in `locationId`'s line. Its `pass` must be called however the job ends. */
    enter(locationId: string): Turn {
      const before = last.get(locationId) ?? Promise.resolve();
      let pass = () => {};
      const passed = new Promise<void>((resolve) => (pass = resolve));
      const mine = Promise.all([before, passed]).then(() => {
        if (last.get(locationId) === mine) last.delete(locationId);
      });
      last.set(locationId, mine);
      return { turn: before, pass };
    },
  };
}
