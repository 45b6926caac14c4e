import { randomBytes } from "node:crypto";

/** How long a session token is good for: short, as a captured payload signs in again (README.md, "The settings page inside HighLevel"). */
export const SESSION_MS = 15 * 60_000;
/** Sessions kept at once; beyond it the oldest goes, so a flood of sign-ins cannot fill memory. */
const MAX_SESSIONS = 10_000;

export interface Session {
  locationId: string;
  userId: string;
  role: string;
  expiresAt: number;
}

export type Sessions = ReturnType<typeof createSessions>;

/**
 * The page's sessions: random 32-byte tokens kept in this process's memory, not signed
 * tokens. Nothing to verify, no second secret to keep, and a token says nothing about
 * whom it belongs to; the cost, a restart signs everyone out, is a page reload (the page
 * signs in again from HighLevel's payload).
 */
export function createSessions(now: () => number, stillInstalled: (locationId: string) => boolean = () => true) {
  const byToken = new Map<string, Session>();

  function prune(): void {
    const at = now();
    for (const [token, session] of byToken) if (session.expiresAt <= at) byToken.delete(token);
    // A Map keeps insertion order: the first keys are the oldest sessions.
    for (const token of byToken.keys()) {
      if (byToken.size < MAX_SESSIONS) break;
      byToken.delete(token);
    }
  }

  return {
    open(fields: Omit<Session, "expiresAt">): { token: string; session: Session } {
      prune();
      const token = randomBytes(32).toString("base64url");
      const session = { ...fields, expiresAt: now() + SESSION_MS };
      byToken.set(token, session);
      return { token, session };
    },
    /** The token's session while it lasts; undefined: unknown, expired, or its location uninstalled since. */
    get(token: string): Session | undefined {
      const session = byToken.get(token);
      if (session && session.expiresAt > now() && stillInstalled(session.locationId)) return session;
      if (session) byToken.delete(token);
      return undefined;
    },
  };
}
