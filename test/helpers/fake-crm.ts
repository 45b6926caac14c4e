import { fixture } from "./fixtures.ts";
import { createReplies } from "./fake-crm-replies.ts";
import { jsonResponse, startFake, type Recorded } from "./http.ts";

export const COMPANY_ID = "company-1";

/**
 * HighLevel's documented answers, as ../shared/fixtures/highlevel holds them (copied to
 * test/fixtures/highlevel; its README names each one's source, and where HighLevel
 * contradicts itself).
 */
export function highlevelFixture(name: string): Record<string, unknown> {
  return fixture("highlevel", `${name}.json`);
}

/** A request body's fields, read as its Content-Type says: a form or JSON. */
export function fieldsOf(req: Recorded): Record<string, unknown> {
  if (req.headers["content-type"]?.startsWith("application/json")) return JSON.parse(req.body) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(req.body));
}

/**
 * A fake HighLevel API that behaves like the real one where bridge depends on it, and
 * answers in its documented shapes (held to the fixtures by fake-crm-contract.test.ts):
 * codes exchange for tokens, refresh tokens are single-use and rotate, company
 * tokens exchange for location tokens, installed locations come in pages. Company
 * tokens refresh (`user_type=Company`) and are revoked with the agency's uninstall.
 * /oauth/locationToken takes JSON or a form, as HighLevel does, and answers without a
 * `refresh_token`, as its v2 reference documents, unless `locationTokens.withRefresh`.
 */
export async function startFakeCrm() {
  let serial = 0;
  /** Authorization codes and the token response each exchanges for. */
  const codes = new Map<string, Record<string, unknown>>();
  /** Live refresh tokens and the location they belong to. */
  const refreshTokens = new Map<string, string>();
  /** What /oauth/installedLocations lists, and how many per page at most. */
  const installed = { ids: [] as string[], pageSize: 100 };
  /** Live company refresh tokens and their company. */
  const companyRefreshTokens = new Map<string, string>();
  /** Every company access token issued, and its company. */
  const companyAccessTokens = new Map<string, string>();
  /** Company access tokens HighLevel no longer accepts (the agency uninstalled the app). */
  const revoked = new Set<string>();
  /** While set, code exchanges wait for it: an exchange still running when an INSTALL arrives. */
  let exchangeHeld: Promise<void> | undefined;
  /** While set, location refreshes are answered (as of their arrival) only once it resolves. */
  let refreshHeld: Promise<void> | undefined;
  /**
   * `withRefresh`: /oauth/locationToken answers with a `refresh_token`, as HighLevel
   * said it does since a later change (fixtures README, note 3).
   */
  const locationTokens = { withRefresh: false };
  /** Locations the app was uninstalled from: HighLevel gives no token for them. */
  const uninstalled = new Set<string>();

  function issueCompany(companyId: string, extra: Record<string, unknown> = {}) {
    serial++;
    const refresh = `company-rt-${serial}`;
    companyRefreshTokens.set(refresh, companyId);
    companyAccessTokens.set(`company-at-${serial}`, companyId);
    return {
      ...highlevelFixture("oauth-token-company"),
      access_token: `company-at-${serial}`,
      refresh_token: refresh,
      companyId,
      // In practice HighLevel does not list the chosen locations here (README, note 6).
      approvedLocations: [],
      ...extra,
    };
  }

  function refused(req: { headers: Record<string, string> }): boolean {
    return revoked.has((req.headers.authorization ?? "").replace(/^Bearer /, ""));
  }

  function issue(locationId: string, extra: Record<string, unknown> = {}) {
    serial++;
    const refresh = `rt-${locationId}-${serial}`;
    refreshTokens.set(refresh, locationId);
    return {
      ...highlevelFixture("oauth-token-location"),
      access_token: `at-${locationId}-${serial}`,
      refresh_token: refresh,
      locationId,
      companyId: COMPANY_ID,
      ...extra,
    };
  }

  /** A /oauth/locationToken answer: no refresh_token, no companyId, no userType, as documented. */
  function issueFromCompany(locationId: string) {
    serial++;
    const access = `at-${locationId}-${serial}`;
    const refresh = locationTokens.withRefresh ? { refresh_token: `rt-${locationId}-${serial}` } : {};
    if (refresh.refresh_token) refreshTokens.set(refresh.refresh_token, locationId);
    return { ...highlevelFixture("oauth-location-token"), access_token: access, locationId, ...refresh };
  }

  const replies = createReplies();
  const fake = await startFake({
    ...replies.routes,
    "POST /oauth/token": async (req) => {
      const form = new URLSearchParams(req.body);
      if (form.get("grant_type") === "authorization_code") {
        await exchangeHeld;
        const answer = codes.get(form.get("code") ?? "");
        return answer ? jsonResponse(answer) : jsonResponse({ error: "invalid_grant" }, 400);
      }
      if (form.get("user_type") === "Company") {
        const companyId = companyRefreshTokens.get(form.get("refresh_token") ?? "");
        if (!companyId) return jsonResponse({ error: "invalid_grant", error_description: "Invalid refresh token" }, 400);
        companyRefreshTokens.delete(form.get("refresh_token") ?? ""); // single-use
        return jsonResponse(issueCompany(companyId));
      }
      const locationId = refreshTokens.get(form.get("refresh_token") ?? "");
      if (!locationId) return jsonResponse({ error: "invalid_grant", error_description: "Invalid refresh token" }, 400);
      refreshTokens.delete(form.get("refresh_token") ?? ""); // single-use
      const answer = issue(locationId);
      await refreshHeld;
      return jsonResponse(answer);
    },
    "POST /oauth/locationToken": (req) => {
      if (refused(req)) return jsonResponse({ message: "Invalid JWT" }, 401);
      // JSON (the spec, HighLevel's app template) or a form (its reference page): it takes both.
      const { companyId, locationId } = bodyFields(req);
      if (typeof companyId !== "string" || typeof locationId !== "string") {
        return jsonResponse({ message: ["companyId must be a string", "locationId must be a string"] }, 422);
      }
      if (uninstalled.has(locationId)) return jsonResponse({ message: "Location not found for this company" }, 400);
      return jsonResponse(issueFromCompany(locationId));
    },
    "GET /oauth/installedLocations": (req) => {
      if (refused(req)) return jsonResponse({ message: "Invalid JWT" }, 401);
      if (!req.query.get("appId")) return jsonResponse({ message: "appId must be a string" }, 422);
      const skip = Number(req.query.get("skip") ?? 0);
      const limit = Math.min(Number(req.query.get("limit") ?? 100), installed.pageSize);
      const [documented] = highlevelFixture("installed-locations").locations as Record<string, unknown>[];
      const page = installed.ids.slice(skip, skip + limit).map((_id) => ({ ...documented, _id, name: `Location ${_id}` }));
      return jsonResponse({ locations: page, count: installed.ids.length, installToFutureLocations: true });
    },
    "PUT /conversations/messages/:messageId/status": (req) => {
      const { status } = JSON.parse(req.body) as { status: string };
      const messageId = decodeURIComponent(req.path.split("/")[3] ?? "");
      return jsonResponse({ ...highlevelFixture("message-status-200"), messageId, status });
    },
  });

  return {
    ...fake,
    codes,
    refreshTokens,
    companyRefreshTokens,
    installed,
    locationTokens,
    /** Contacts made by upserts, replies taken or dropped, and `state.down` to make both fail. */
    replies,
    /** Code exchanges wait until the returned function is called. */
    holdExchanges(): () => void {
      let release = () => {};
      exchangeHeld = new Promise<void>((resolve) => (release = resolve));
      return () => {
        exchangeHeld = undefined;
        release();
      };
    },
    /**
     * Location refreshes are answered only when the returned function is called, as
     * decided when each arrived: a refresh in flight while the app is uninstalled.
     */
    holdRefreshes(): () => void {
      let release = () => {};
      refreshHeld = new Promise<void>((resolve) => (release = resolve));
      return () => {
        refreshHeld = undefined;
        release();
      };
    },
    /** HighLevel no longer accepts this company access token (revoked before its expiry); the refresh token still works. */
    revokeAccessToken(token: string) {
      revoked.add(token);
    },
    /** The agency uninstalled the app: its company tokens are refused, no location is listed. */
    uninstallCompany(companyId = COMPANY_ID) {
      for (const [token, owner] of companyRefreshTokens) if (owner === companyId) companyRefreshTokens.delete(token);
      for (const [token, owner] of companyAccessTokens) if (owner === companyId) revoked.add(token);
      installed.ids = [];
    },
    /** Makes `code` exchange for a fresh token of `locationId`; returns that response. */
    grantLocation(code: string, locationId: string, extra: Record<string, unknown> = {}) {
      uninstalled.delete(locationId);
      const answer = issue(locationId, extra);
      codes.set(code, answer);
      return answer;
    },
    /** The app is uninstalled from `locationId`: its refresh tokens are revoked, as HighLevel does, and no new token is given. */
    uninstall(locationId: string) {
      for (const [token, owner] of refreshTokens) if (owner === locationId) refreshTokens.delete(token);
      uninstalled.add(locationId);
    },
    /** Makes `code` exchange for a company-scoped token. */
    grantCompany(code: string, extra: Record<string, unknown> = {}) {
      const answer = issueCompany(String(extra.companyId ?? COMPANY_ID), extra);
      codes.set(code, answer);
      return answer;
    },
    /** The status reports received, as parsed bodies with their message id. */
    statusReports() {
      return fake.received("PUT /conversations/messages/").map((r) => ({
        messageId: decodeURIComponent(r.path.split("/")[3] ?? ""),
        authorization: r.headers.authorization,
        version: r.headers.version,
        body: JSON.parse(r.body) as { status: string; error?: { code: string; type: string; message: string } },
      }));
    },
  };
}

export type FakeCrm = Awaited<ReturnType<typeof startFakeCrm>>;

/** A request's body fields; a body that is neither JSON nor a form has none. */
function bodyFields(req: Recorded): Record<string, unknown> {
  try {
    return fieldsOf(req);
  } catch {
    return {};
  }
}
