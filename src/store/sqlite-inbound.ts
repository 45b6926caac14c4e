import type { Commit } from "../db/commit.ts";
import type { Db } from "../db/index.ts";
import { createInboundStore, type NewInbound } from "../db/inbound.ts";
import type { MonthOf } from "../db/usage-month.ts";
import type { OptOutStore } from "../db/optouts.ts";
import type { AssignRefusal, InboundStore } from "./contract.ts";
import { facade } from "./facade.ts";

// A reply's moves share commits; a stored row as it is, an operator's routing and pruning commit at once.
const WRITES = {
  batched: ["setContact", "markPosting", "posted", "retryLater", "lookLater", "giveUp"],
  alone: ["insert", "route", "prune", "resumePosting"],
} as const;

/** The replies over SQLite (src/db/inbound.ts), with a reply's opt-out word applied in its own transaction. */
export function sqliteInbound(db: Db, commit: Commit, optOuts: Pick<OptOutStore, "add" | "remove">, monthOf: MonthOf): InboundStore {
  const sync = createInboundStore(db, monthOf);
  function applyOptOut(row: Pick<NewInbound, "optOut" | "locationId" | "phone">, now: number): void {
    if (!row.optOut || !row.locationId) return;
    if (row.optOut === "stop") optOuts.add({ locationId: row.locationId, phone: row.phone, by: "reply", at: now });
    else optOuts.remove(row.locationId, row.phone);
  }
  // Each a transaction of its own inside the group's (a savepoint): all of it or none.
  const receive = db.transaction((row: NewInbound, now: number): string | undefined => {
    const earlier = sync.idOfKey(row.dedupeKey);
    if (earlier) return earlier;
    sync.insert({ ...row, state: row.locationId ? "queued" : "unrouted" }, now);
    applyOptOut(row, now);
    return undefined;
  });
  const assign = db.transaction((inboundId: string, locationId: string, now: number): AssignRefusal | undefined => {
    const reply = sync.get(inboundId);
    if (!reply) return { why: "not_found" };
    if (reply.state !== "unrouted") return { why: "routed", locationId: reply.locationId };
    if (!sync.installed(locationId)) return { why: "not_installed" };
    sync.route(inboundId, locationId, now);
    applyOptOut({ ...reply, locationId }, now);
    return undefined;
  });
  return {
    ...facade<Omit<InboundStore, "receive" | "assign">>(sync, commit, WRITES),
    receive: (row, now) => commit(() => receive(row, now)),
    assign: (inboundId, locationId, now) => commit(() => assign(inboundId, locationId, now), true),
  };
}
