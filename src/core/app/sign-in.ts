import type { LocationRegistry } from "../../store/contract.ts";
import { clip } from "../../errors.ts";
import { ID_RULE, isId } from "../ids.ts";
import { printable } from "../printable.ts";
import { decryptPayload, parseUser } from "./payload.ts";
import type { Session, Sessions } from "./sessions.ts";

export interface SignInDeps {
  /** CRM_SHARED_SECRET; "" refuses every sign-in. */
  sharedSecret: string;
  tokens: Pick<LocationRegistry, "companyOf" | "ofCompany">;
  sessions: Sessions;
  /** Where refusals are told; the server bounds how many lines a flood of them writes. */
  warn: (message: string) => void;
}

/** A session, or why not: `full`, no room for another session now (nothing is wrong with the payload). */
export type SignIn = { token: string; session: Session } | { refused: string; full?: boolean };

/**
 * A session from HighLevel's encrypted user payload (CONTRACT 11). Authority comes from the
 * payload alone (any HTTPS origin may frame the page): it must open with CRM_SHARED_SECRET,
 * hold the user's JSON, and name a location installed here and not uninstalled. A refusal
 * is logged at warn with why, never with the payload's text.
 */
export async function signIn(deps: SignInDeps, payload: unknown): Promise<SignIn> {
  const refused = (reason: string): SignIn => {
    deps.warn(`settings page sign-in refused: ${reason}`);
    return { refused: "the sign-in could not be verified: open this page from HighLevel" };
  };
  if (!deps.sharedSecret) return refused("CRM_SHARED_SECRET is not set");
  if (typeof payload !== "string" || payload === "") return refused("no encrypted payload");
  const json = decryptPayload(payload, deps.sharedSecret);
  if (json === undefined) return refused(`the payload does not open with CRM_SHARED_SECRET (${payload.length} characters)`);
  const user = parseUser(json);
  if (typeof user === "string") return refused(user);
  if (!isId(user.activeLocation)) return refused(`the payload's activeLocation is not an id: it ${ID_RULE}`);
  const location = await installedHere(deps.tokens, user.activeLocation);
  const named = printable(clip(user.activeLocation, 64));
  if (!location) return refused(`location ${named} is not installed`);
  if (location.uninstalledAt > 0) return refused(`location ${named} is uninstalled`);
  // A user of another agency naming this location: HighLevel would not, a forger might.
  if (location.companyId && user.companyId !== location.companyId) return refused(`location ${named} is not of the payload's company`);
  const opened = await deps.sessions.open({ locationId: location.locationId, userId: user.userId, role: user.role });
  return opened ?? { refused: "too many people are signed in to this page: try again in a few minutes", full: true };
}

/** The location as installed here, with its company; undefined when it is not. Read without opening a token. */
export async function installedHere(tokens: SignInDeps["tokens"], locationId: string) {
  const companyId = await tokens.companyOf(locationId);
  const location = companyId === undefined ? undefined : (await tokens.ofCompany(companyId)).find((l) => l.locationId === locationId);
  return location && { ...location, companyId };
}
