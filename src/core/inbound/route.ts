import { AppError } from "../../errors.ts";
import type { RoutedBy } from "../../store/types.ts";

/** What routing asks of the store. */
export interface RouteLookups {
  /** An installed location (not uninstalled). */
  installed(locationId: string): Promise<boolean>;
  /** The locations the phone `deviceId` serves. */
  locationsOfDevice(deviceId: string): Promise<string[]>;
  /** The installed location that last sent to this phone (E.164 or local form); with `deviceId`, only through that phone. */
  lastSentTo(e164: string, local: string, deviceId?: string): Promise<string | undefined>;
}

export interface Routed {
  /** "" : unrouted. */
  locationId: string;
  routedBy: RoutedBy;
}

/**
 * The location a reply is for (docs/http.md, "Replies"):
 * the one its source names; else the one the receiving phone serves, if only one; else
 * the one that last sent to the sender (through that phone, for a phone's reply: a number
 * another location texted through Cast or another phone replies there, not here); else
 * none (unrouted, for an operator to route).
 * A named location that is not installed is refused: the source named the wrong one.
 */
export async function routeReply(reply: { locationId?: string; deviceId?: string; phone: string }, look: RouteLookups): Promise<Routed> {
  if (reply.locationId !== undefined) {
    if (!(await look.installed(reply.locationId))) {
      throw new AppError("BAD_INBOUND", `location_id ${reply.locationId} is not a location where the app is installed`);
    }
    return { locationId: reply.locationId, routedBy: "given" };
  }
  if (reply.deviceId) {
    const served = await look.locationsOfDevice(reply.deviceId);
    if (served.length === 1 && served[0]) return { locationId: served[0], routedBy: "device" };
  }
  const last = await look.lastSentTo(reply.phone, localForm(reply.phone), reply.deviceId || undefined);
  if (last) return { locationId: last, routedBy: "last_sent" };
  return { locationId: "", routedBy: "" };
}

/** +639171234567 -> 09171234567, as a webhook may have written the phone a message went to. */
function localForm(e164: string): string {
  return e164.startsWith("+63") ? `0${e164.slice(3)}` : e164;
}
