import { wallClock } from "../clock.ts";
/**
 * How HighLevel's answers read: a token, a page of locations, or a CrmError of the kind
 * each refusal means (errors.ts, CrmFailure). The one place HighLevel's HTTP statuses are read.
 */
import { z } from "zod";
import { CrmError, clip, errorMessage, type CrmFailure } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import { withoutControls } from "../printable.ts";
import { retryAfterMs } from "../retry.ts";
import type { CrmAnswer, TokenResponse } from "./crm-types.ts";

export type { CrmAnswer } from "./crm-types.ts";

/** The API versions HighLevel's endpoints ask for: locations and contacts; conversations. */
export const LOCATION_API_VERSION = "2021-07-28";
export const MESSAGES_API_VERSION = "2021-04-15";

export function statusError(what: string, endpoint: Endpoint, res: CrmAnswer): CrmError {
  const message = `${what} returned ${res.status}: ${clip(res.text)}`;
  // A 429 says how long to wait ("100 requests per 10 s").
  const retryAfter = res.status === 429 ? { retryAfterMs: retryAfterMs(res.retryAfter, wallClock()) } : {};
  // A 502 or 503 comes from before HighLevel's service acted; a 500 or 504 may come after.
  const notTaken = res.status < 500 || res.status === 502 || res.status === 503;
  return new CrmError(crmKind(endpoint, res), message, { ...retryAfter, notTaken });
}

/** Which kind of call HighLevel answered: the token endpoint, the status call, or another with a bearer token. */
export type Endpoint = "token" | "status" | "bearer";

/** What a non-2xx answer from HighLevel means (errors.ts, CrmFailure): the one place its statuses are read. */
export function crmKind(endpoint: Endpoint, res: Pick<CrmAnswer, "status" | "text">): CrmFailure {
  const { status } = res;
  if (status === 429) return "rate_limited";
  if (status >= 500 || status === 408) return "unclear";
  // OAuth's invalid_grant (a 400, or a 401): the refresh token or the code is dead.
  if (endpoint === "token") return (status === 400 || status === 401) && /invalid_grant/i.test(res.text) ? "grant_invalid" : "rejected";
  if (status === 401) return "token_refused";
  // HighLevel answers the status call 403 for the first seconds after a webhook: not a token problem.
  if (endpoint === "status" && status === 403) return "unclear";
  return "rejected";
}

/** HighLevel's ids: checked here, so no other code meets one that could steer a path or a log line. */
const crmId = z.string().regex(ID_PATTERN, `not an id (${ID_RULE})`);

export const tokenSchema = z.object({
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
export const locationTokenSchema = tokenSchema.extend({ refresh_token: z.string().min(1).nullish() });

export const locationsSchema = z.object({
  // A name is shown in listings only: clipped, and never a reason to refuse the page. Any
  // agency may name its locations: stored without the control characters a terminal obeys.
  locations: z.array(z.object({ _id: crmId, name: z.string().nullish().catch(null).transform((n) => n && withoutControls(n).slice(0, 200)) })),
  count: z.number().int().nonnegative().optional(),
});

export function parseToken(text: string, prefix: string, schema: z.ZodType<z.output<typeof locationTokenSchema>>): TokenResponse {
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

export function parse<T>(text: string, schema: z.ZodType<T>, prefix: string): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CrmError("unclear", `${prefix}: ${errorMessage(error)}`, { cause: error });
  }
  const result = schema.safeParse(json);
  if (!result.success) throw new CrmError("unclear", `${prefix}: ${z.prettifyError(result.error).replace(/\n/g, "; ")}`);
  return result.data;
}
