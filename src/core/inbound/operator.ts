import type { Db } from "../../db/index.ts";
import { createInboundStore, type InboundStore, type NewInbound } from "../../db/inbound.ts";
import { createOptOutStore } from "../../db/optouts.ts";
import { AppError } from "../../errors.ts";
import { createOptOutList } from "../opt-out-list.ts";
import type { OptOutList } from "./reply.ts";

/**
 * `bridge messages route ID LOC`: an unrouted reply is given its location and queued for
 * HighLevel; a stop or start word in it changes that location's opt-out list then, in the
 * same transaction. A running serve posts it at its next look at the queue.
 */
export function routeInbound(db: Db, store: InboundStore, optOuts: OptOutList, inboundId: string, locationId: string, now: number): void {
  db.transaction(() => {
    const reply = store.get(inboundId);
    if (!reply) throw new AppError("INBOUND_NOT_FOUND", `reply not found: ${inboundId}`);
    if (reply.state !== "unrouted") throw new AppError("BAD_INBOUND", `reply ${inboundId} is routed already (to ${reply.locationId})`);
    if (!store.installed(locationId)) throw new AppError("BAD_INBOUND", `${locationId} is not a location where the app is installed`);
    store.route(inboundId, locationId, now);
    applyOptOut(optOuts, { ...reply, locationId });
  }).immediate();
}

/** Puts the sender on the location's opt-out list, or takes it off, as the reply asks. */
export function applyOptOut(list: OptOutList, row: Pick<NewInbound, "optOut" | "locationId" | "phone">): void {
  if (!row.optOut) return;
  if (row.optOut === "stop") list.add(row.locationId, row.phone, "reply");
  else list.remove(row.locationId, row.phone);
}

/** routeInbound over the database alone: `bridge messages route`, through heavy.ts (numbers are read with libphonenumber). */
export function routeStoredReply(db: Db, inboundId: string, locationId: string, now: number): void {
  routeInbound(db, createInboundStore(db), createOptOutList(createOptOutStore(db), () => now), inboundId, locationId, now);
}
