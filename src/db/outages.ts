import type { Db } from "./index.ts";
import { ms } from "./ms.ts";

/** An outage as serve records it for other processes (`bridge status`). */
export interface OutageRecord {
  /** "crm" (HighLevel) or "cast" (Cast.ph). */
  remote: string;
  since: number;
  /** The failure's kind (network.ts): timeout, refused, server_error, … */
  kind: string;
  /** What the last failed call met. */
  reason: string;
  failedCalls: number;
  lastFailedAt: number;
}

/** How many messages wait on each remote now, counted from the job table. */
export interface OutageWaits {
  /** Messages to send through Cast (not on a held key, not through a phone). */
  cast: number;
  /** Messages whose status waits to be reported to HighLevel, and replies waiting to be posted. */
  crm: number;
}

export type OutageRecords = ReturnType<typeof createOutageRecords>;

interface Row {
  remote: string;
  since: number;
  kind: string;
  reason: string;
  failed_calls: number;
  last_failed_at: number;
}

/** The `outages` table: written by serve when an outage starts, goes on and ends; read by status. */
export function createOutageRecords(db: Db) {
  const upsert = db.prepare<[Row]>(`
    INSERT INTO outages (remote, since, kind, reason, failed_calls, last_failed_at)
    VALUES (@remote, @since, @kind, @reason, @failed_calls, @last_failed_at)
    ON CONFLICT (remote) DO UPDATE SET kind = excluded.kind, reason = excluded.reason,
      failed_calls = excluded.failed_calls, last_failed_at = excluded.last_failed_at`);
  const remove = db.prepare<[string]>("DELETE FROM outages WHERE remote = ?");
  const clear = db.prepare("DELETE FROM outages");
  const all = db.prepare<[], Row>("SELECT * FROM outages ORDER BY since");
  const waits = db.prepare<[], OutageWaits>(`
    SELECT
      (SELECT count(*) FROM jobs WHERE state IN ('queued', 'sending') AND held = 0
        AND location_id NOT IN (SELECT location_id FROM location_gateways WHERE gateway = 'android')) AS cast,
      (SELECT count(*) FROM jobs WHERE state = 'reporting' AND receipt_deadline IS NULL)
        + (SELECT count(*) FROM inbound WHERE state IN ('queued', 'posting')) AS crm`);

  return {
    save(outage: OutageRecord): void {
      const { remote, kind, reason } = outage;
      upsert.run({ remote, kind, reason, since: ms(outage.since), failed_calls: outage.failedCalls, last_failed_at: ms(outage.lastFailedAt) });
    },
    end(remote: string): void {
      remove.run(remote);
    },
    /** At serve's start: what a stopped serve recorded is over, or will be found again. */
    clear(): void {
      clear.run();
    },
    list(): OutageRecord[] {
      return all.all().map((r) => ({
        remote: r.remote,
        since: r.since,
        kind: r.kind,
        reason: r.reason,
        failedCalls: r.failed_calls,
        lastFailedAt: r.last_failed_at,
      }));
    },
    waits(): OutageWaits {
      return waits.get() ?? { cast: 0, crm: 0 };
    },
  };
}
