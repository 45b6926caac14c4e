import type { Db } from "./index.ts";
import { ms } from "./ms.ts";
import { OUTCOME_COLUMNS, type OutcomeColumn } from "./usage-count.ts";

/** One location's usage in one month through one gateway (docs/usage.md). */
export type UsageRow = {
  locationId: string;
  /** The location's name in HighLevel; "" when not known (or no longer stored). */
  name: string;
  /** Its monthly cap now; null: none. */
  cap: number | null;
  month: string;
  /** 'cast', 'android', or 'api' (replies taken by POST /api/inbound). */
  gateway: string;
  messages: number;
  parts: number;
  replies: number;
} & Record<OutcomeColumn, number>;

/** Which rows to read: one month, one location, or a range of months (`from` to `to`, both included). */
export interface UsageFilter {
  locationId?: string;
  from?: string;
  to?: string;
}

/** A location's cap this month, and how much of it is taken. */
export interface CapStanding {
  locationId: string;
  cap: number;
  /** Parts of messages settled this month, and of those claimed and not settled yet. */
  used: number;
}

export type UsageStore = ReturnType<typeof createUsageStore>;

/** The reason a message over its location's cap is reported failed with: the CRM user reads it. */
export function capReached(cap: number): string {
  return `monthly SMS limit of ${cap} reached; your agency can raise it`;
}

/**
 * The usage table (schema 17), the locations' monthly caps and the parts their sends have
 * reserved. Counting is done with the jobs' and replies' own writes (usage-count.ts); this
 * reads it, sets caps, and reserves parts at a send's claim (`reservation`, jobs-send.ts).
 */
export function createUsageStore(db: Db) {
  const s = prepareStatements(db);
  return {
    /** Usage rows by month, then location, then gateway. */
    list(filter: UsageFilter): UsageRow[] {
      return s.list.all({ location: filter.locationId ?? null, from: filter.from ?? null, to: filter.to ?? null });
    },
    /** The location's monthly cap of SMS parts; undefined: none. */
    capOf(locationId: string): number | undefined {
      return s.capOf.get(locationId);
    },
    /** Sets (a number) or removes (null) the location's monthly cap; false when no such location is stored. */
    setCap(locationId: string, cap: number | null, now: number): boolean {
      if (s.known.get(locationId) === undefined) return false;
      if (cap === null) s.removeCap.run(locationId);
      else s.setCap.run({ location: locationId, cap, now: ms(now) });
      return true;
    },
    /** Parts of the location's month taken: settled, and reserved by sends not settled yet. */
    used(locationId: string, month: string): number {
      return s.used.get({ location: locationId, month }) ?? 0;
    },
    /**
     * The locations with a cap whose month's use is at or over `percent` % of it (the
     * alerts' 80 % and 100 %): a cap of 0 is reached at once.
     */
    atOrOver(month: string, percent: number): CapStanding[] {
      return s.standings.all({ month }).filter((r) => r.used * 100 >= r.cap * percent);
    },
  };
}

/**
 * A send's reservation of its parts, inside the claim's transaction (jobs-send.ts): the
 * location's month's use (settled and reserved) plus these must stay within its cap. A job
 * reserves once; its later attempts are the same send. "capped": refused, nothing reserved.
 */
export function prepareReservation(db: Db) {
  const s = prepareStatements(db);
  return (id: number, parts: number, month: string): { cap: number } | undefined => {
    const job = s.reservable.get(id);
    if (!job) return undefined;
    const cap = s.capOf.get(job.location);
    if (cap !== undefined && s.used.get({ location: job.location, month })! + parts > cap) return { cap };
    s.reserve.run({ location: job.location, month, parts });
    s.markReserved.run({ id, month, parts });
    return undefined;
  };
}

const USED = `(SELECT coalesce(sum(parts), 0) FROM usage WHERE location_id = @location AND month = @month)
  + (SELECT coalesce(sum(parts), 0) FROM usage_reserved WHERE location_id = @location AND month = @month)`;

function prepareStatements(db: Db) {
  return {
    list: db.prepare<[{ location: string | null; from: string | null; to: string | null }], UsageRow>(`
      SELECT u.location_id AS locationId, coalesce(t.location_name, '') AS name, c.monthly_cap AS cap, month, gateway,
        messages, parts, replies, ${OUTCOME_COLUMNS.join(", ")}
      FROM usage AS u LEFT JOIN tokens AS t USING (location_id) LEFT JOIN usage_caps AS c USING (location_id)
      WHERE (@location IS NULL OR u.location_id = @location) AND (@from IS NULL OR month >= @from) AND (@to IS NULL OR month <= @to)
      ORDER BY month, u.location_id, gateway`),
    capOf: db.prepare<[string], number>("SELECT monthly_cap FROM usage_caps WHERE location_id = ?").pluck(),
    known: db.prepare<[string], number>("SELECT 1 FROM tokens WHERE location_id = ?").pluck(),
    setCap: db.prepare<[{ location: string; cap: number; now: number }]>(`
      INSERT INTO usage_caps (location_id, monthly_cap, updated_at) VALUES (@location, @cap, @now)
      ON CONFLICT (location_id) DO UPDATE SET monthly_cap = excluded.monthly_cap, updated_at = excluded.updated_at`),
    removeCap: db.prepare<[string]>("DELETE FROM usage_caps WHERE location_id = ?"),
    used: db.prepare<[{ location: string; month: string }], number>(`SELECT ${USED}`).pluck(),
    standings: db.prepare<[{ month: string }], CapStanding>(`
      SELECT location_id AS locationId, monthly_cap AS cap, ${USED.replaceAll("@location", "usage_caps.location_id")} AS used FROM usage_caps ORDER BY location_id`),
    // A queued job that has not reserved yet: a retry of a claimed send reserves nothing more.
    reservable: db.prepare<[number], { location: string }>(
      "SELECT location_id AS location FROM jobs WHERE id = ? AND state = 'queued' AND reserved_parts = 0 AND counted = 0",
    ),
    reserve: db.prepare<[{ location: string; month: string; parts: number }]>(`
      INSERT INTO usage_reserved (location_id, month, parts) VALUES (@location, @month, @parts)
      ON CONFLICT (location_id, month) DO UPDATE SET parts = parts + excluded.parts`),
    markReserved: db.prepare<[{ id: number; month: string; parts: number }]>(
      "UPDATE jobs SET reserved_parts = @parts, usage_month = @month WHERE id = @id",
    ),
  };
}
