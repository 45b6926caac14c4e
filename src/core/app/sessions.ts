import { randomBytes } from "node:crypto";

/** How long a session token is good for: short, as a captured payload signs in again (README.md, "The settings page inside HighLevel"). */
export const SESSION_MS = 15 * 60_000;
/** Sessions kept at once, so memory is bounded: beyond it a new user waits, and nobody is signed out. */
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
 *
 * One session per user and location: a new sign-in replaces that user's token there, so
 * signing in again and again (one payload, replayed) holds one session, and never takes
 * another user's.
 */
export function createSessions(now: () => number, stillInstalled: (locationId: string) => Promise<boolean> = async () => true, maxSessions = MAX_SESSIONS) {
  const byToken = new Map<string, Session>();
  const byUser = new Map<string, string>();

  function drop(token: string): void {
    const session = byToken.get(token);
    byToken.delete(token);
    if (session && byUser.get(userKey(session)) === token) byUser.delete(userKey(session));
  }

  function prune(): void {
    const at = now();
    for (const [token, session] of byToken) if (session.expiresAt <= at) drop(token);
  }

  return {
    /** A new session, replacing the user's previous one at the location; undefined while MAX_SESSIONS others last. */
    open(fields: Omit<Session, "expiresAt">): { token: string; session: Session } | undefined {
      const previous = byUser.get(userKey(fields));
      if (previous !== undefined) drop(previous);
      if (byToken.size >= maxSessions) prune();
      if (byToken.size >= maxSessions) return undefined;
      const token = randomBytes(32).toString("base64url");
      const session = { ...fields, expiresAt: now() + SESSION_MS };
      byToken.set(token, session);
      byUser.set(userKey(session), token);
      return { token, session };
    },
    /** The token's session while it lasts; undefined: unknown, expired, replaced, or its location uninstalled since. */
    async get(token: string): Promise<Session | undefined> {
      const session = byToken.get(token);
      if (session && session.expiresAt > now() && await stillInstalled(session.locationId)) return session;
      if (session) drop(token);
      return undefined;
    },
  };
}

/** A user and a location, as one key: a location id holds no NUL, so no two pairs share one. */
function userKey(session: Pick<Session, "locationId" | "userId">): string {
  return `${session.locationId}\u0000${session.userId}`;
}
