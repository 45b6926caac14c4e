import pRetry from "p-retry";
import { z } from "zod";
import { CrmError, clip, errorMessage } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import { withoutControls } from "../printable.ts";
import { pRetryOptions, RETRY, retryAfterMs, waitAsRemoteAsked } from "../retry.ts";
import { callFailure, hostOf } from "./network.ts";
import { observed, type CallObserver } from "./observe.ts";
import { exchange } from "./transport.ts";
import { inboundAnswer, upsertBody, upsertSchema, type ContactUpsert, type InboundMessage } from "./crm-replies.ts";

export type { ContactUpsert, InboundMessage } from "./crm-replies.ts";

/** The CRM platform (HighLevel / LeadConnector) API, as bridge uses it. */
export interface CrmOptions {
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  /** {BASE_URL}/oauth-callback, sent with the code exchange. */
  redirectUri: string;
  /** The 24-hex part of the client id. */
  appId: string;
  /** Every request gives up after this long (spec: 30 s). */
  timeoutMs?: number;
  /** First back-off after a 429 with no Retry-After. */
  retryDelayMs?: number;
  /** Told of every HTTP exchange: its time and how it ended (outages, metrics). */
  observe?: CallObserver;
}

export interface TokenResponse {
  accessToken: string;
  /** "" when a /oauth/locationToken answer has none: the company's token renews it. */
  refreshToken: string;
  expiresIn: number;
  userType: string;
  locationId: string;
  companyId: string;
  installedLocations: string[];
}

/** A location where the app is installed, as /oauth/installedLocations lists it. */
export interface InstalledLocation {
  id: string;
  /** "" when HighLevel gave none. */
  name: string;
}

export type MessageStatus =
  | { status: "delivered" }
  | { status: "failed"; error: { code: string; type: "saas"; message: string } };

export type CrmClient = ReturnType<typeof createCrmClient>;

/**
 * How a call meets HighLevel's 429: "wait" sleeps through Retry-After and tries again (a
 * command, which has nothing else to do); "throw" gives the CrmError, with its
 * retryAfterMs, back at once (a queue job, which waits in the queue and holds no worker).
 */
export type RateLimitMode = "wait" | "throw";

const LOCATION_API_VERSION = "2021-07-28";
const MESSAGES_API_VERSION = "2021-04-15";
const PAGE_SIZE = 100;
const MAX_PAGES = 1000;

export function createCrmClient(options: CrmOptions) {
  const { clientId, clientSecret } = options;
  const timeout = options.timeoutMs ?? 30_000;
  const retryDelay = options.retryDelayMs ?? RETRY.crmRateLimit.firstMs;
  const host = hostOf(options.apiUrl);

  /** The one place that talks HTTP to the CRM: base URL, auth, version, timeout. */
  async function request(path: string, init: Request): Promise<Answer> {
    const headers: Record<string, string> = { Accept: "application/json", ...init.headers };
    if (init.token) headers.Authorization = `Bearer ${init.token}`;
    if (init.version) headers.Version = init.version;
    let res;
    try {
      const call = { remote: "crm" as const, operation: init.operation, host, timeoutMs: timeout, observe: options.observe };
      res = await observed(call, () =>
        exchange(path, { baseURL: options.apiUrl, method: init.method, headers, body: init.body, query: init.query, timeout }),
      );
    } catch (error) {
      // Not a CrmError: no answer came, and callers retry these as before (the cause is kept).
      throw new Error(callFailure(error, host, timeout).message, { cause: error });
    }
    return { status: res.status, text: res._data ?? "", retryAfter: res.headers.get("retry-after") };
  }

  /** Retries the CRM's 429 ("100 requests per 10 s"), honouring Retry-After. */
  function withRateLimitRetry<T>(fn: () => Promise<T>): Promise<T> {
    return pRetry(fn, {
      ...pRetryOptions(RETRY.crmRateLimit, retryDelay),
      shouldRetry: ({ error }) => error instanceof CrmError && error.httpStatus === 429,
      onFailedAttempt: waitAsRemoteAsked,
    });
  }

  async function tokenGrant(operation: string, form: Record<string, string>): Promise<TokenResponse> {
    const res = await request("/oauth/token", {
      operation,
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: clientId, client_secret: clientSecret, ...form }).toString(),
    });
    if (res.status !== 200) throw new CrmError(`token endpoint returned ${res.status}: ${clip(res.text)}`, answerInfo(res));
    return parseToken(res.text, "failed to parse token response", tokenSchema);
  }

  function postJson(path: string, operation: string, token: string, version: string, body: unknown): Promise<Answer> {
    const headers = { "Content-Type": "application/json" };
    return request(path, { operation, method: "POST", token, version, headers, body: JSON.stringify(body) });
  }

  return {
    exchangeCode(code: string): Promise<TokenResponse> {
      return tokenGrant("exchangeCode", { grant_type: "authorization_code", code, redirect_uri: options.redirectUri });
    },

    /** A location's token (`Location`, the default) or an agency's (`Company`). */
    refreshToken(refreshToken: string, userType: "Location" | "Company" = "Location"): Promise<TokenResponse> {
      return tokenGrant("refreshToken", { grant_type: "refresh_token", refresh_token: refreshToken, user_type: userType });
    },

    /** Exchanges a company token for one location's token. */
    getLocationToken(companyToken: string, companyId: string, locationId: string, rateLimit: RateLimitMode = "wait"): Promise<TokenResponse> {
      const once = async () => {
        const res = await request("/oauth/locationToken", {
          operation: "getLocationToken",
          method: "POST",
          token: companyToken,
          version: LOCATION_API_VERSION,
          // JSON, as the spec pins it (4.2) and HighLevel's marketplace-app template sends
          // it; HighLevel takes a form too, which its reference page shows.
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ companyId, locationId }),
        });
        if (res.status !== 200) throw statusError("locationToken endpoint", res);
        return parseToken(res.text, "failed to parse location token response", locationTokenSchema);
      };
      return rateLimit === "wait" ? withRateLimitRetry(once) : once();
    },

    /** Every location of the company where this app is installed, following the pages. */
    async listInstalledLocations(companyToken: string, companyId: string): Promise<InstalledLocation[]> {
      const found: InstalledLocation[] = [];
      for (let page = 0; page < MAX_PAGES; page++) {
        const { locations, count } = await withRateLimitRetry(async () => {
          const res = await request("/oauth/installedLocations", {
            operation: "listInstalledLocations",
            method: "GET",
            token: companyToken,
            version: LOCATION_API_VERSION,
            query: { companyId, appId: options.appId, isInstalled: "true", skip: found.length, limit: PAGE_SIZE },
          });
          if (res.status !== 200) throw statusError("locations endpoint", res);
          return parse(res.text, locationsSchema, "failed to parse locations response");
        });
        found.push(...locations.map((l) => ({ id: l._id, name: l.name ?? "" })));
        // A page may hold fewer than asked for: only an empty page or the count ends it.
        if (locations.length === 0 || (count !== undefined && found.length >= count)) break;
      }
      return found;
    },

    async updateMessageStatus(locationToken: string, messageId: string, status: MessageStatus): Promise<void> {
      const res = await request(`/conversations/messages/${encodeURIComponent(messageId)}/status`, {
        operation: "updateMessageStatus",
        method: "PUT",
        token: locationToken,
        version: MESSAGES_API_VERSION,
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(status),
      });
      if (res.status < 200 || res.status > 299) throw statusError("status endpoint", res);
    },

    /** `POST /contacts/upsert`: the contact of `phone` in the location, made if new; its id. `dnd`: its SMS DND set or lifted. */
    async upsertContact(locationToken: string, contact: ContactUpsert): Promise<string> {
      const res = await postJson("/contacts/upsert", "upsertContact", locationToken, LOCATION_API_VERSION, upsertBody(contact));
      if (res.status < 200 || res.status > 299) throw statusError("contacts upsert endpoint", res);
      return parse(res.text, upsertSchema, "failed to parse contacts upsert response").contact.id;
    },

    /**
     * `POST /conversations/messages/inbound`: a reply into the contact's conversation; HighLevel's
     * message id. A 2xx without one is HighLevel dropping it (a custom provider's message
     * without a valid conversationProviderId gets 201 with an empty body).
     */
    async addInboundMessage(locationToken: string, message: InboundMessage): Promise<string> {
      const body = { type: "SMS", direction: "inbound", ...message };
      const res = await postJson("/conversations/messages/inbound", "addInboundMessage", locationToken, MESSAGES_API_VERSION, body);
      if (res.status < 200 || res.status > 299) throw statusError("inbound message endpoint", res);
      const answer = inboundAnswer(res.text);
      if (!answer) {
        const error = `inbound message endpoint answered ${res.status} without a message id (${clip(res.text) || "empty body"}): HighLevel dropped it`;
        throw new CrmError(error, answerInfo(res));
      }
      return answer.messageId;
    },
  };
}

interface Request {
  /** The public function making the call, for the observer. */
  operation: string;
  method: "GET" | "POST" | "PUT";
  headers?: Record<string, string>;
  body?: string;
  query?: Record<string, string | number>;
  token?: string;
  version?: string;
}

interface Answer {
  status: number;
  text: string;
  retryAfter: string | null;
}

function statusError(what: string, res: Answer): CrmError {
  const message = `${what} returned ${res.status}: ${clip(res.text)}`;
  // A 429 says how long to wait ("100 requests per 10 s").
  const retryAfter = res.status === 429 ? { retryAfterMs: retryAfterMs(res.retryAfter, Date.now()) } : {};
  return new CrmError(message, { ...answerInfo(res), ...retryAfter });
}

function answerInfo(res: Answer) {
  return { httpStatus: res.status, body: res.text };
}

/** HighLevel's ids: checked here, so no other code meets one that could steer a path or a log line. */
const crmId = z.string().regex(ID_PATTERN, `not an id (${ID_RULE})`);

const tokenSchema = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  expires_in: z.number().int().positive(),
  userType: z.string().nullish(),
  locationId: crmId.or(z.literal("")).nullish(),
  companyId: crmId.or(z.literal("")).nullish(),
  installedLocations: z.array(crmId).nullish(),
});

/**
 * HighLevel's v2 reference documents this answer without `refresh_token`; a later change
 * added one. Without it, the location's token is renewed through its company's.
 */
const locationTokenSchema = tokenSchema.extend({ refresh_token: z.string().min(1).nullish() });

const locationsSchema = z.object({
  // A name is shown in listings only: clipped, and never a reason to refuse the page. Any
  // agency may name its locations: stored without the control characters a terminal obeys.
  locations: z.array(z.object({ _id: crmId, name: z.string().nullish().catch(null).transform((n) => n && withoutControls(n).slice(0, 200)) })),
  count: z.number().int().nonnegative().optional(),
});

function parseToken(text: string, prefix: string, schema: z.ZodType<z.output<typeof locationTokenSchema>>): TokenResponse {
  const t = parse(text, schema, prefix);
  return {
    accessToken: t.access_token,
    refreshToken: t.refresh_token ?? "",
    expiresIn: t.expires_in,
    userType: t.userType ?? "",
    locationId: t.locationId ?? "",
    companyId: t.companyId ?? "",
    installedLocations: t.installedLocations ?? [],
  };
}

function parse<T>(text: string, schema: z.ZodType<T>, prefix: string): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CrmError(`${prefix}: ${errorMessage(error)}`, { cause: error });
  }
  const result = schema.safeParse(json);
  if (!result.success) throw new CrmError(`${prefix}: ${z.prettifyError(result.error).replace(/\n/g, "; ")}`);
  return result.data;
}
