import type { InboundStore } from "../../store/contract.ts";
import { AppError } from "../../errors.ts";

/**
 * `bridge messages route ID LOC`: an unrouted reply is given its location and queued for
 * HighLevel; a stop or start word in it changes that location's opt-out list then, in the
 * same transaction (the store's `assign`). A running serve posts it at its next look at the queue.
 */
export async function routeInbound(store: Pick<InboundStore, "assign">, inboundId: string, locationId: string, now: number): Promise<void> {
  const refused = await store.assign(inboundId, locationId, now);
  if (!refused) return;
  if (refused.why === "not_found") throw new AppError("INBOUND_NOT_FOUND", `reply not found: ${inboundId}`);
  if (refused.why === "routed") throw new AppError("BAD_INBOUND", `reply ${inboundId} is routed already (to ${refused.locationId})`);
  throw new AppError("BAD_INBOUND", `${locationId} is not a location where the app is installed`);
}

/** routeInbound for `bridge messages route`, through heavy.ts (numbers are read with libphonenumber). */
export const routeStoredReply = routeInbound;
