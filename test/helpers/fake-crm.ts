import { jsonResponse, startFake, type Recorded } from "./http.ts";

export const COMPANY_ID = "company-1";

/** A request body's fields, read as its Content-Type says: a form or JSON. */
export function fieldsOf(req: Recorded): Record<string, unknown> {
  if (req.headers["content-type"]?.startsWith("application/json")) return JSON.parse(req.body) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(req.body));
}

/**
 * A fake HighLevel API that behaves like the real one where bridge depends on it:
 * codes exchange for tokens, refresh tokens are single-use and rotate, company
 * tokens exchange for location tokens, installed locations come in pages. Company
 * tokens refresh (`user_type=Company`) and are revoked with the agency's uninstall.
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

  function issueCompany(companyId: string, extra: Record<string, unknown> = {}) {
    serial++;
    const refresh = `company-rt-${serial}`;
    companyRefreshTokens.set(refresh, companyId);
    companyAccessTokens.set(`company-at-${serial}`, companyId);
    return {
      access_token: `company-at-${serial}`,
      refresh_token: refresh,
      expires_in: 86399,
      userType: "Company",
      companyId,
      locationId: null,
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
      access_token: `at-${locationId}-${serial}`,
      refresh_token: refresh,
      expires_in: 86399,
      token_type: "Bearer",
      userType: "Location",
      locationId,
      companyId: COMPANY_ID,
      ...extra,
    };
  }

  const fake = await startFake({
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
      return jsonResponse(issue(locationId));
    },
    "POST /oauth/locationToken": (req) => {
      if (refused(req)) return jsonResponse({ message: "Invalid JWT" }, 401);
      // JSON (the spec, HighLevel's app template) or a form (its reference page): it takes both.
      const { companyId, locationId } = bodyFields(req);
      if (typeof companyId !== "string" || typeof locationId !== "string") {
        return jsonResponse({ message: ["companyId must be a string", "locationId must be a string"] }, 422);
      }
      return jsonResponse(issue(locationId));
    },
    "GET /oauth/installedLocations": (req) => {
      if (refused(req)) return jsonResponse({ message: "Invalid JWT" }, 401);
      if (!req.query.get("appId")) return jsonResponse({ message: "appId must be a string" }, 422);
      const skip = Number(req.query.get("skip") ?? 0);
      const limit = Math.min(Number(req.query.get("limit") ?? 100), installed.pageSize);
      const page = installed.ids.slice(skip, skip + limit).map((_id) => ({ _id, name: `Location ${_id}` }));
      return jsonResponse({ locations: page, count: installed.ids.length });
    },
    "PUT /conversations/messages/:messageId/status": () => jsonResponse({ success: true }),
  });

  return {
    ...fake,
    codes,
    refreshTokens,
    companyRefreshTokens,
    installed,
    /** Code exchanges wait until the returned function is called. */
    holdExchanges(): () => void {
      let release = () => {};
      exchangeHeld = new Promise<void>((resolve) => (release = resolve));
      return () => {
        exchangeHeld = undefined;
        release();
      };
    },
    /** The agency uninstalled the app: its company tokens are refused, no location is listed. */
    uninstallCompany(companyId = COMPANY_ID) {
      for (const [token, owner] of companyRefreshTokens) if (owner === companyId) companyRefreshTokens.delete(token);
      for (const [token, owner] of companyAccessTokens) if (owner === companyId) revoked.add(token);
      installed.ids = [];
    },
    /** Makes `code` exchange for a fresh token of `locationId`; returns that response. */
    grantLocation(code: string, locationId: string, extra: Record<string, unknown> = {}) {
      const answer = issue(locationId, extra);
      codes.set(code, answer);
      return answer;
    },
    /** The app is uninstalled from `locationId`: its refresh tokens are revoked, as HighLevel does. */
    uninstall(locationId: string) {
      for (const [token, owner] of refreshTokens) if (owner === locationId) refreshTokens.delete(token);
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
