import type { H3, H3Event } from "h3";
import { iso } from "../core/duration.ts";
import type { Core } from "../core/index.ts";
import type { Session, Sessions } from "../core/app/sessions.ts";
import { signIn } from "../core/app/sign-in.ts";
import { httpError } from "./http-error.ts";
import { createLogBudget } from "./auth.ts";
import { addressShares, createClientAddress } from "./client.ts";
import { createFailureThrottle } from "./throttle.ts";
import { createBodyBudget, parseJson, readLimitedBody, type BodyBudget } from "./body.ts";

/** HighLevel's payload is a few hundred characters; nothing unsigned larger is read. */
const SESSION_BODY_LIMIT = 16 * 1024;
/** Refused sign-ins logged per minute, all clients together, so a flood cannot fill the disk. */
const LOG_LIMIT = 100;
/** Refused sign-ins a client address may make a minute: a page signs in once per load, and a real one is not refused. */
const SIGN_INS_PER_MINUTE = 20;
/** Calls to the page's API a user may make a minute at a location: the page makes a handful per view. */
const CALLS_PER_MINUTE = 60;

export interface SessionRouteDeps {
  core: Pick<Core, "config" | "tokens" | "log" | "now">;
  sessions: Sessions;
  /** What unsigned bodies may hold in memory together, shared with the webhooks. */
  bodyBudget?: BodyBudget;
}

/**
 * `POST /app/session` (docs/http.md, "Endpoints"): `{"payload": "<HighLevel's
 * encrypted user>"}` in, `{"token", "expires_at", "location_id", "role"}` out, or 401.
 */
export function sessionRoutes(app: H3, { core, sessions, bodyBudget = createBodyBudget() }: SessionRouteDeps): void {
  const mayLog = createLogBudget(LOG_LIMIT, 60_000, core.now, () =>
    core.log.warn(`more than ${LOG_LIMIT} refused settings page sign-ins within 60 s: the rest of them are not logged`),
  );
  const warn = (message: string) => void (mayLog() && core.log.warn(message));
  const clientOf = createClientAddress(core.config);
  const tries = createFailureThrottle({ limit: SIGN_INS_PER_MINUTE, windowMs: 60_000, now: core.now });
  app.post("/app/session", async (event) => {
    // Refused sign-ins count, by the client's shares (an IPv6 /64 and its /48, so rotating
    // addresses buys nothing). A valid one does not: users behind one carrier NAT or office
    // address must not be locked out by junk from a neighbour, and each user and location
    // holds one session whatever they do.
    const shares = addressShares(clientOf(event));
    const wait = Math.max(...shares.map((share) => tries.blockedFor(share)));
    if (wait > 0) throw tooMany(`at most ${SIGN_INS_PER_MINUTE} refused sign-ins a minute from one address`, wait);
    const lease = bodyBudget.lease();
    let body: unknown;
    try {
      body = parseJson(await readLimitedBody(event, lease, SESSION_BODY_LIMIT));
    } finally {
      lease.release();
    }
    const payload = body && typeof body === "object" && !Array.isArray(body) ? (body as { payload?: unknown }).payload : undefined;
    const deps = { sharedSecret: core.config.crm.sharedSecret, tokens: core.tokens, sessions, warn };
    const result = await signIn(deps, payload);
    if ("refused" in result) {
      if (!result.full) for (const share of shares) tries.fail(share);
      throw result.full ? httpError(503, result.refused, { "retry-after": "60" }) : httpError(401, result.refused);
    }
    const { token, session } = result;
    return { token, expires_at: iso(session.expiresAt), location_id: session.locationId, role: session.role };
  });
}

export interface PageGuard {
  /** The session of a page's call (`Authorization: Bearer <token>`), or its 401; past the user's calls a minute, 429. */
  sessionOf(event: H3Event): Promise<Session>;
  /** The session, when it may change the location's settings: HighLevel's role "admin". */
  adminSessionOf(event: H3Event): Promise<Session>;
}

/**
 * The page's API's door: a session, and its user's share of calls, CALLS_PER_MINUTE at
 * their location whichever token they hold, so signing in again buys no more. A Map
 * lookup is not constant-time; a token is 256 random bits, which no timing can guess.
 */
export function createPageGuard(sessions: Sessions, now: () => number): PageGuard {
  const calls = createFailureThrottle({ limit: CALLS_PER_MINUTE, windowMs: 60_000, now });
  async function sessionOf(event: H3Event): Promise<Session> {
    const match = /^Bearer\s+(\S+)$/i.exec(event.req.headers.get("authorization")?.trim() ?? "");
    const session = match?.[1] ? await sessions.get(match[1]) : undefined;
    if (!session) throw httpError(401, "session expired or unknown: reload the page", { "www-authenticate": "Bearer" });
    const user = `${session.locationId}\u0000${session.userId}`;
    const wait = calls.blockedFor(user);
    if (wait > 0) throw tooMany(`at most ${CALLS_PER_MINUTE} calls a minute from this page`, wait);
    calls.fail(user);
    return session;
  }
  return {
    sessionOf,
    async adminSessionOf(event) {
      const session = await sessionOf(event);
      if (session.role !== "admin") throw httpError(403, "only a location admin may change these settings");
      return session;
    },
  };
}

/** A 429 that says when to come again, in its text and in Retry-After. */
function tooMany(what: string, waitMs: number) {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return httpError(429, `${what}: try again in ${seconds} s`, { "retry-after": String(seconds) });
}
