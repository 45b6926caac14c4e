import pRetry from "p-retry";
import { CrmError, clip } from "../../errors.ts";
import { pRetryOptions, RETRY, waitAsRemoteAsked } from "../retry.ts";
import { crmKind, LOCATION_API_VERSION, MESSAGES_API_VERSION, locationsSchema, locationTokenSchema, parse, parseToken, statusError, tokenSchema } from "./crm-answers.ts";
import { callFailure, hostOf } from "./network.ts";
import { observed } from "./observe.ts";
import { callRemote } from "./transport.ts";
import type { CrmCalls, CrmOptions, TokenResponse } from "./crm-types.ts";
import { findInboundMessages, type PostedReply } from "./crm-lookup.ts";
import { addInboundMessage, upsertContact, type ContactUpsert, type InboundMessage } from "./crm-replies.ts";

export type { ContactUpsert, InboundMessage } from "./crm-replies.ts";
export type { PostedReply } from "./crm-lookup.ts";
export type { CrmCalls, CrmOptions, TokenResponse } from "./crm-types.ts";

/** A location where the app is installed, as /oauth/installedLocations lists it. */
export interface InstalledLocation {
  id: string;
  /** "" when HighLevel gave none. */
  name: string;
}

export type ReportedStatus =
  | { status: "delivered" }
  | { status: "failed"; error: { code: string; type: "saas"; message: string } };

export type CrmClient = ReturnType<typeof createCrmClient>;

/**
 * How a call meets HighLevel's 429: "wait" sleeps through Retry-After and tries again (a
 * command, which has nothing else to do); "throw" gives the CrmError, with its
 * retryAfterMs, back at once (a queue job, which waits in the queue and holds no worker).
 */
export type RateLimitMode = "wait" | "throw";

const PAGE_SIZE = 100;
const MAX_PAGES = 1000;

export function createCrmClient(options: CrmOptions) {
  const crm = crmCalls(options);
  return {
    exchangeCode(code: string): Promise<TokenResponse> {
      return tokenGrant(crm, "exchangeCode", { grant_type: "authorization_code", code, redirect_uri: options.redirectUri });
    },

    /** A location's token (`Location`, the default) or an agency's (`Company`). */
    refreshToken(refreshToken: string, userType: "Location" | "Company" = "Location"): Promise<TokenResponse> {
      return tokenGrant(crm, "refreshToken", { grant_type: "refresh_token", refresh_token: refreshToken, user_type: userType });
    },

    /** Exchanges a company token for one location's token. */
    getLocationToken(companyToken: string, companyId: string, locationId: string, rateLimit: RateLimitMode = "wait"): Promise<TokenResponse> {
      const once = () => fetchLocationToken(crm, companyToken, companyId, locationId);
      return rateLimit === "wait" ? crm.withRateLimitRetry(once) : once();
    },

    /** Every location of the company where this app is installed, following the pages. */
    listInstalledLocations: (companyToken: string, companyId: string) => installedLocations(crm, companyToken, companyId),

    updateMessageStatus: (locationToken: string, messageId: string, status: ReportedStatus) => messageStatus(crm, locationToken, messageId, status),

    upsertContact: (locationToken: string, contact: ContactUpsert) => upsertContact(crm, locationToken, contact),

    addInboundMessage: (locationToken: string, message: InboundMessage) => addInboundMessage(crm, locationToken, message),

    /** HighLevel's ids of the messages that are this reply, posted before with no clear answer. */
    findInboundMessages: (locationToken: string, reply: PostedReply) => findInboundMessages(crm, locationToken, reply),
  };
}

function crmCalls(options: CrmOptions): CrmCalls {
  const timeout = options.timeoutMs ?? 30_000;
  const retryDelay = options.retryDelayMs ?? RETRY.crmRateLimit.firstMs;
  const host = hostOf(options.apiUrl);
  return {
    options,
    async request(path, init) {
      const headers: Record<string, string> = { Accept: "application/json", ...init.headers };
      if (init.token) headers.Authorization = `Bearer ${init.token}`;
      if (init.version) headers.Version = init.version;
      let res;
      try {
        const call = { remote: "crm" as const, operation: init.operation, host, timeoutMs: timeout, observe: options.observe };
        res = await observed(call, () =>
          callRemote(path, { baseURL: options.apiUrl, method: init.method, headers, body: init.body, query: init.query, timeout }),
        );
      } catch (error) {
        // Not a CrmError: no answer came, and callers retry these as before (the cause is kept).
        throw new Error(callFailure(error, host, timeout).message, { cause: error });
      }
      return { status: res.status, text: res._data ?? "", retryAfter: res.headers.get("retry-after") };
    },
    withRateLimitRetry(fn) {
      return pRetry(fn, {
        ...pRetryOptions(RETRY.crmRateLimit, retryDelay),
        shouldRetry: ({ error }) => error instanceof CrmError && error.kind === "rate_limited",
        onFailedAttempt: waitAsRemoteAsked,
      });
    },
  };
}

async function tokenGrant(crm: CrmCalls, operation: string, form: Record<string, string>): Promise<TokenResponse> {
  const { clientId, clientSecret } = crm.options;
  const res = await crm.request("/oauth/token", {
    operation,
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: clientId, client_secret: clientSecret, ...form }).toString(),
  });
  // Without its Retry-After: a refresh met by a 429 is tried again at the caller's pace.
  if (res.status !== 200) throw new CrmError(crmKind("token", res), `token endpoint returned ${res.status}: ${clip(res.text)}`);
  return parseToken(res.text, "failed to parse token response", tokenSchema);
}

async function fetchLocationToken(crm: CrmCalls, companyToken: string, companyId: string, locationId: string): Promise<TokenResponse> {
  const res = await crm.request("/oauth/locationToken", {
    operation: "getLocationToken",
    method: "POST",
    token: companyToken,
    version: LOCATION_API_VERSION,
    // JSON, as the spec pins it (4.2) and HighLevel's marketplace-app template sends
    // it; HighLevel takes a form too, which its reference page shows.
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ companyId, locationId }),
  });
  if (res.status !== 200) throw statusError("locationToken endpoint", "bearer", res);
  return parseToken(res.text, "failed to parse location token response", locationTokenSchema);
}

async function installedLocations(crm: CrmCalls, companyToken: string, companyId: string): Promise<InstalledLocation[]> {
  const found: InstalledLocation[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const { locations, count } = await crm.withRateLimitRetry(async () => {
      const res = await crm.request("/oauth/installedLocations", {
        operation: "listInstalledLocations",
        method: "GET",
        token: companyToken,
        version: LOCATION_API_VERSION,
        query: { companyId, appId: crm.options.appId, isInstalled: "true", skip: found.length, limit: PAGE_SIZE },
      });
      if (res.status !== 200) throw statusError("locations endpoint", "bearer", res);
      return parse(res.text, locationsSchema, "failed to parse locations response");
    });
    found.push(...locations.map((l) => ({ id: l._id, name: l.name ?? "" })));
    // A page may hold fewer than asked for: only an empty page or the count ends it.
    if (locations.length === 0 || (count !== undefined && found.length >= count)) break;
  }
  return found;
}

async function messageStatus(crm: CrmCalls, locationToken: string, messageId: string, status: ReportedStatus): Promise<void> {
  const res = await crm.request(`/conversations/messages/${encodeURIComponent(messageId)}/status`, {
    operation: "updateMessageStatus",
    method: "PUT",
    token: locationToken,
    version: MESSAGES_API_VERSION,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(status),
  });
  if (res.status < 200 || res.status > 299) throw statusError("status endpoint", "status", res);
}
