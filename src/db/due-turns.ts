import type { DueJob } from "./job-types.ts";

/** A location with jobs queued or reporting, and when its earliest send and its earliest report are due (null: none). */
export interface WaitingLocation {
  location_id: string;
  sends_at: number | null;
  reports_at: number | null;
}

/** A due job of one location, as read from its state's index. */
export interface DueRow {
  id: number;
  next_attempt_at: number;
  state: "queued" | "reporting";
  locationId: string;
}

/** What `due` reads of each location: `each` jobs of those whose reports are due, and of those whose sends are. */
export interface DueReads {
  each: number;
  reports: string[];
  sends: string[];
}

/**
 * Which locations' due jobs to read, and how many of each: a location's reports when
 * its earliest is due, its sends when its earliest is due and it does not wait for a
 * budget (`waiting`). The same plan on every store (jobs-queue.ts, the PostgreSQL job store).
 */
export function dueReads(locations: WaitingLocation[], now: number, limit: number, waiting?: (locationId: string) => boolean): DueReads {
  const each = Math.ceil(limit / Math.max(1, locations.length)) + 1;
  const isDue = (at: number | null) => at !== null && at <= now;
  return {
    each,
    reports: locations.filter((l) => isDue(l.reports_at)).map((l) => l.location_id),
    sends: locations.filter((l) => isDue(l.sends_at) && !waiting?.(l.location_id)).map((l) => l.location_id),
  };
}

/**
 * The due rows in turns between locations: each location's first, then each one's second,
 * and so on, so a location's backlog (a bulk campaign) never stands between another and
 * its turn; within a location, the earliest first; at most `each` of a location, `limit` in all.
 */
export function inTurns(rows: DueRow[], each: number, limit: number): DueJob[] {
  const byLocation = new Map<string, DueRow[]>();
  for (const row of rows) {
    const mine = byLocation.get(row.locationId);
    if (mine) mine.push(row);
    else byLocation.set(row.locationId, [row]);
  }
  const turns = [...byLocation.values()].flatMap((mine) =>
    mine
      .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
      .slice(0, each)
      .map(({ id, state, locationId, next_attempt_at }, i) => ({ id, state, locationId, turn: i + 1, at: next_attempt_at })),
  );
  turns.sort((a, b) => a.turn - b.turn || a.at - b.at || a.id - b.id);
  return turns.slice(0, limit).map(({ id, state, locationId, turn }) => ({ id, state, locationId, turn }));
}
