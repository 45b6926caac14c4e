import { wallClock } from "../clock.ts";

/** A job's place in its location's line (createSendOrder). */
export interface Turn {
  /** Resolves once every job started before it in its location has passed. */
  turn: Promise<void>;
  /** After the turn: the ms this job waits because a job of its location told to wait for its budgets keeps its place ahead of it (0: none does). */
  ahead: () => number;
  /**
   * Lets the next one on; must be called however the job ends (again: nothing more).
   * `waitMs` > 0: its budgets told it to wait that long, and it keeps its place ahead of
   * the location's other jobs until it takes them; 0 or none: it took them, or ended.
   */
  pass: (waitMs?: number) => void;
}

/**
 * How long past its wait a job told to wait keeps its place, at most: the queue starts it
 * again at once, but on a loaded machine its reads may take a while; one that never comes
 * back (another server sent it) frees the line after this.
 */
const PLACE_KEPT_MS = 5_000;
/** A job that leaves its turn to one keeping its place looks again after at least this. */
const BEHIND_MS = 100;

/**
 * A location's sends take their budgets in the order the queue started them (its due
 * jobs, oldest first), whatever order their reads of the store end in: on SQLite they end
 * at once, in order; on PostgreSQL each is a round trip, and without this a location's
 * third message could take the key's (or a phone's hourly) last token before its first.
 * The reads still run side by side; only the budgets are taken one after another. A
 * job's turn comes once every job started before it in its location has passed.
 *
 * A job its budgets told to wait keeps its place: until it takes them, the location's
 * other jobs take none (`ahead`). Else one started behind it whose reads end after the
 * wait (a phone's pace of one a second, say) would take the token it waited for, and go
 * first; with a phone's hourly budget, the earlier message would wait the hour.
 */
export function createSendOrder(now: () => number = wallClock) {
  const last = new Map<string, Promise<void>>();
  /** Per location, the job told to wait for its budgets, and when that wait ends. */
  const kept = new Map<string, { jobId: number; until: number }>();
  const ahead = (locationId: string, jobId: number): number => {
    const place = kept.get(locationId);
    if (!place || place.jobId === jobId) return 0;
    const t = now();
    if (t < place.until + PLACE_KEPT_MS) return Math.max(place.until - t, BEHIND_MS);
    kept.delete(locationId);
    return 0;
  };
  return {
    /** Called in start order: the started job's turn in `locationId`'s line. */
    enter(locationId: string, jobId: number): Turn {
      const before = last.get(locationId) ?? Promise.resolve();
      let resolve = () => {};
      const passed = new Promise<void>((done) => (resolve = done));
      const mine = Promise.all([before, passed]).then(() => {
        if (last.get(locationId) === mine) last.delete(locationId);
      });
      last.set(locationId, mine);
      let gone = false;
      const pass = (waitMs = 0): void => {
        if (gone) return;
        gone = true;
        if (waitMs > 0) kept.set(locationId, { jobId, until: now() + waitMs });
        else if (kept.get(locationId)?.jobId === jobId) kept.delete(locationId);
        resolve();
      };
      return { turn: before, ahead: () => ahead(locationId, jobId), pass };
    },
  };
}
