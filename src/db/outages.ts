import type { Db } from "./index.ts";
import { ms } from "./ms.ts";

/** An outage as serve records it for other processes (`bridge status`). */
export interface OutageRecord {
  /** "crm" (HighLevel), "cast" (Cast.ph) or "phone:<device id>". */
  remote: string;
  since: number;
  /** The failure's kind (network.ts): timeout, refused, server_error, … */
  kind: string;
  /** What the last failed call met. */
  reason: string;
  failedCalls: number;
  lastFailedAt: number;
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
  // What waits on each: Cast's, a location's messages not sent through a phone (nor on a held
  // key); HighLevel's, reports to make and replies to post; a phone's, its locations' messages.
  const castWaits = db.prepare<[], number>(`
    SELECT count(*) FROM jobs WHERE state IN ('queued', 'sending') AND held = 0
      AND location_id NOT IN (SELECT location_id FROM location_gateways WHERE gateway = 'android')`).pluck();
  const crmWaits = db.prepare<[], number>(`
    SELECT (SELECT count(*) FROM jobs WHERE state = 'reporting' AND receipt_deadline IS NULL)
      + (SELECT count(*) FROM inbound WHERE state IN ('queued', 'posting'))`).pluck();
  const phoneWaits = db.prepare<[string], number>(`
    SELECT count(*) FROM jobs WHERE state IN ('queued', 'sending') AND location_id IN
      (SELECT location_id FROM location_gateways WHERE gateway = 'android' AND android_device = ?)`).pluck();
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
    /** How many messages wait on `remote` now, counted from the job and reply tables. */
    waits(remote: string): number {
      if (remote === "cast") return castWaits.get() ?? 0;
      if (remote === "crm") return crmWaits.get() ?? 0;
      return remote.startsWith("phone:") ? (phoneWaits.get(remote.slice("phone:".length)) ?? 0) : 0;
    },
  };
}
