import type { Db } from "./index.ts";
import { ms } from "./ms.ts";

/** Who put a number on a location's opt-out list: a stop-word reply, the operator, or a location admin on the settings page. */
export type OptOutBy = "reply" | "operator" | "page";

export const OPT_OUT_BY: readonly OptOutBy[] = ["reply", "operator", "page"];

/** One number on a location's opt-out list. */
export interface OptOut {
  locationId: string;
  /** E.164, as the list is keyed. */
  phone: string;
  by: OptOutBy;
  /** When it was put there, ms since the epoch. */
  at: number;
}

export type OptOutStore = ReturnType<typeof createOptOutStore>;

interface Row {
  location_id: string;
  phone: string;
  opted_out_by: OptOutBy;
  opted_out_at: number;
}

/**
 * The locations' opt-out lists (docs/cli.md, "Opt-outs"). Numbers come in normalised
 * (core/inbound/opt-out-list.ts): the store compares them as they are.
 */
export function createOptOutStore(db: Db) {
  // A number already listed keeps who listed it first and when: a second STOP, or an
  // operator's add, changes nothing.
  const insert = db.prepare<[Row]>(`
    INSERT INTO opt_outs (location_id, phone, opted_out_by, opted_out_at)
    VALUES (@location_id, @phone, @opted_out_by, @opted_out_at)
    ON CONFLICT (location_id, phone) DO NOTHING`);
  const remove = db.prepare<[string, string]>("DELETE FROM opt_outs WHERE location_id = ? AND phone = ?");
  const has = db.prepare<[string, string], number>("SELECT 1 FROM opt_outs WHERE location_id = ? AND phone = ?").pluck();
  const list = db.prepare<[string], Row>("SELECT * FROM opt_outs WHERE location_id = ? ORDER BY opted_out_at DESC, phone");
  const counts = db.prepare<[], { opted_out_by: OptOutBy; n: number }>("SELECT opted_out_by, count(*) AS n FROM opt_outs GROUP BY opted_out_by");

  return {
    /** Lists the number; false when it was listed already (nothing changed). */
    add(optOut: OptOut): boolean {
      const row = { location_id: optOut.locationId, phone: optOut.phone, opted_out_by: optOut.by, opted_out_at: ms(optOut.at) };
      return insert.run(row).changes > 0;
    },
    /** Takes the number off; false when it was not listed. */
    remove(locationId: string, phone: string): boolean {
      return remove.run(locationId, phone).changes > 0;
    },
    has(locationId: string, phone: string): boolean {
      return has.get(locationId, phone) !== undefined;
    },
    /** The location's list, the newest first. */
    list(locationId: string): OptOut[] {
      return list.all(locationId).map((r) => ({ locationId: r.location_id, phone: r.phone, by: r.opted_out_by, at: r.opted_out_at }));
    },
    /** Numbers on all the lists together, by who listed them. */
    counts(): Record<OptOutBy, number> {
      const found: Record<OptOutBy, number> = { reply: 0, operator: 0, page: 0 };
      for (const { opted_out_by, n } of counts.all()) found[opted_out_by] = n;
      return found;
    },
  };
}
