import type { H3, H3Event } from "h3";
import { iso } from "../core/duration.ts";
import type { Core } from "../core/index.ts";
import type { Session, Sessions } from "../core/app/sessions.ts";
import { signIn } from "../core/app/sign-in.ts";
import { httpError } from "./http-error.ts";
import { createLogBudget } from "./auth.ts";
import { createBodyBudget, parseJson, readLimitedBody, type BodyBudget } from "./body.ts";

/** HighLevel's payload is a few hundred characters; nothing unsigned larger is read. */
const SESSION_BODY_LIMIT = 16 * 1024;
/** Refused sign-ins logged per minute, all clients together, so a flood cannot fill the disk. */
const LOG_LIMIT = 100;

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
  app.post("/app/session", async (event) => {
    const lease = bodyBudget.lease();
    let body: unknown;
    try {
      body = parseJson(await readLimitedBody(event, lease, SESSION_BODY_LIMIT));
    } finally {
      lease.release();
    }
    const payload = body && typeof body === "object" && !Array.isArray(body) ? (body as { payload?: unknown }).payload : undefined;
    const deps = { sharedSecret: core.config.crm.sharedSecret, tokens: core.tokens, sessions, warn };
    const result = signIn(deps, payload);
    if ("refused" in result) throw httpError(401, result.refused);
    const { token, session } = result;
    return { token, expires_at: iso(session.expiresAt), location_id: session.locationId, role: session.role };
  });
}

/**
 * The session of a page's call (`Authorization: Bearer <token>`), or its 401. A Map lookup
 * is not constant-time; a token is 256 random bits, which no timing can guess.
 */
export function sessionOf(sessions: Sessions, event: H3Event): Session {
  const match = /^Bearer\s+(\S+)$/i.exec(event.req.headers.get("authorization")?.trim() ?? "");
  const session = match?.[1] ? sessions.get(match[1]) : undefined;
  if (!session) throw httpError(401, "session expired or unknown: reload the page", { "www-authenticate": "Bearer" });
  return session;
}

/** The session, when it may change the location's settings: HighLevel's role "admin". */
export function adminSessionOf(sessions: Sessions, event: H3Event): Session {
  const session = sessionOf(sessions, event);
  if (session.role !== "admin") throw httpError(403, "only a location admin may change these settings");
  return session;
}
