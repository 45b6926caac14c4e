import { createHash, randomBytes } from "node:crypto";
import type { AppSession, AppSessionStore } from "../../store/contract.ts";

/** How long a session token is good for: short, as a captured payload signs in again (README.md, "The settings page inside HighLevel"). */
export const SESSION_MS = 15 * 60_000;
/** Sessions lasting at once, so the table is bounded: beyond it a new user waits, and nobody is signed out. */
const MAX_SESSIONS = 10_000;

export type Session = AppSession;

export type Sessions = ReturnType<typeof createSessions>;

/**
 * The page's sessions: random 32-byte tokens, not signed tokens. Nothing to verify, no
 * second secret to keep, and a token says nothing about whom it belongs to. They are kept
 * in the store (only each token's SHA-256, so a read of the database gives no live token),
 * so a session opened through one server works on every other on the same database, and
 * survives a restart. The expired ones are removed with the hourly pruning.
 *
 * One session per user and location: a new sign-in replaces that user's token there, so
 * signing in again and again (one payload, replayed) holds one session, and never takes
 * another user's.
 */
export function createSessions(
  store: AppSessionStore,
  now: () => number,
  stillInstalled: (locationId: string) => Promise<boolean> = async () => true,
  maxSessions = MAX_SESSIONS,
) {
  return {
    /** A new session, replacing the user's previous one at the location; undefined while MAX_SESSIONS others last. */
    async open(fields: Omit<Session, "expiresAt">): Promise<{ token: string; session: Session } | undefined> {
      const token = randomBytes(32).toString("base64url");
      const session = { ...fields, expiresAt: now() + SESSION_MS };
      return (await store.open(hashOf(token), session, now(), maxSessions)) ? { token, session } : undefined;
    },
    /** The token's session while it lasts; undefined: unknown, expired, replaced, or its location uninstalled since. */
    async get(token: string): Promise<Session | undefined> {
      const session = await store.get(hashOf(token), now());
      if (session && (await stillInstalled(session.locationId))) return session;
      if (session) await store.drop(hashOf(token));
      return undefined;
    },
  };
}

/** What the store keeps of a token: its SHA-256, hex. */
function hashOf(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
