import type { CompanyStore } from "../../store/contract.ts";
import type { CompanyRecord } from "../../store/types.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { CrmClient, RateLimitMode, TokenResponse } from "../clients/crm.ts";
import { AppError, errorMessage, noToken } from "../../errors.ts";
import { refusedAsIs, tokenRefused } from "../retry-policy.ts";
import type { Logger } from "../log.ts";
import { createRefresher, deadGrantNote } from "./refresh.ts";

export { needsRefresh, REFRESH_MARGIN_MS } from "./refresh.ts";

export interface TokenServiceDeps {
  tokens: LocationRegistry;
  crm: CrmClient;
  /** Renew the locations whose token came from /oauth/locationToken without a refresh token. */
  companyTokens: CompanyTokens;
  companies: CompanyStore;
  now: () => number;
  log: Logger;
  /** How long a refresh lease is held at most (a crashed holder frees it then). */
  leaseMs?: number;
  /** How long to wait for another process's refresh before giving up. */
  waitMs?: number;
  /** First wait before storing a refreshed pair again; doubles each time. */
  storeRetryMs?: number;
}

/** At most one refresh a 401 forces, per location, within this. */
const RENEW_401_MS = 10 * 60_000;

export type TokenService = ReturnType<typeof createTokenService>;

/**
 * Valid access tokens for locations, refreshed single-flight (refresh.ts): one
 * promise per location inside this process, a lease row in SQLite between processes.
 * A location with no refresh token (HighLevel's /oauth/locationToken may give none)
 * is renewed through its company's token instead, on the same single-flight path.
 */
export function createTokenService(deps: TokenServiceDeps) {
  const { tokens, crm, now } = deps;
  const { validToken, forJob, refresh, confirm } = createRefresher<TokenRecord>({
    ...deps,
    store: tokens,
    grant: (record, rateLimit) => (record.refreshToken ? crm.refreshToken(record.refreshToken, "Location") : throughCompany(deps, record, rateLimit)),
    noun: "location",
    missing: noToken,
    refusedForGood: (error, record) => (record.refreshToken ? deadGrantNote(error, "location") : refusedThroughCompany(error)),
  });

  // Per location, when a 401 last made us fetch a new token. If the CRM refuses that
  // one too, the token is not the problem (HighLevel also answers 401 for a missing scope).
  const renewedAfter401 = new Map<string, number>();

  return {
    /** The location's record with an access token good for at least 5 more minutes. */
    validToken,
    /** validToken for a queue job: the record, or `{ waitMs }` (refresh.ts). */
    forJob,
    /** Refreshes now if needed, or always with `force` (the CLI's `token refresh --force`), even a token refused before. */
    refresh,
    /** A forced refresh that asks HighLevel itself now, or undefined (refresh.ts). */
    confirm,
    /**
     * The CRM answered 401 to `accessToken`: fetch a new one. Not when the location
     * already holds a newer one, nor more than once in RENEW_401_MS per location:
     * every refresh spends the single-use refresh token.
     */
    async rejected(locationId: string, accessToken: string): Promise<void> {
      const current = await tokens.get(locationId);
      if (!current || current.accessToken !== accessToken || current.refreshError) return;
      if (now() - (renewedAfter401.get(locationId) ?? -Infinity) < RENEW_401_MS) return;
      renewedAfter401.set(locationId, now());
      // Called from a report's job: a 429 is not slept through in a worker.
      await refresh(locationId, true, "throw");
    },
  };
}

/**
 * A 401 from /oauth/locationToken refuses the company's access token, not the location
 * (HighLevel may revoke an access token before its expiry): the company's token is
 * renewed, once, and the location asked for again. Only a company refused for good, or
 * a 4xx about the location on that second ask, marks the location (refusedThroughCompany).
 */
async function throughCompany(deps: TokenServiceDeps, record: TokenRecord, rateLimit: RateLimitMode): Promise<TokenResponse> {
  const { crm, companyTokens, companies, log } = deps;
  const { locationId, companyId } = record;
  if (!companyId) throw new AppError("NO_COMPANY_TOKEN", `location ${locationId} has no refresh token and no company`);
  const company = await companyToken(companies, companyId, () => companyTokens.validToken(companyId));
  try {
    return await crm.getLocationToken(company.accessToken, companyId, locationId, rateLimit);
  } catch (error) {
    if (!tokenRefused(error)) throw error;
    log.warn(`the CRM refused company ${companyId}'s access token for location ${locationId} (${errorMessage(error)}); renewing it`);
    // Another caller may have renewed it meanwhile: then that one is used, not spent again.
    const current = await companies.get(companyId);
    const renewed =
      current && current.accessToken !== company.accessToken
        ? current
        : await companyToken(companies, companyId, () => companyTokens.refresh(companyId, true));
    return crm.getLocationToken(renewed.accessToken, companyId, locationId, rateLimit);
  }
}

/** The company's token from `get`; gone or refused for good, only the agency installing again brings it back. */
async function companyToken(companies: CompanyStore, companyId: string, get: () => Promise<CompanyRecord>): Promise<CompanyRecord> {
  try {
    return await get();
  } catch (error) {
    const stored = await companies.get(companyId);
    if (!stored || stored.refreshError) throw new AppError("NO_COMPANY_TOKEN", `company ${companyId}: ${errorMessage(error)}`, { cause: error });
    throw error;
  }
}

export interface CompanyTokenDeps extends Omit<TokenServiceDeps, "tokens" | "companyTokens"> {
  companies: CompanyStore;
}

export type CompanyTokens = ReturnType<typeof createCompanyTokens>;

/**
 * Valid access tokens for agencies (companies), refreshed with `user_type=Company`
 * through the same single-flight path and lease as the locations'.
 */
export function createCompanyTokens(deps: CompanyTokenDeps) {
  const { companies, crm } = deps;
  return createRefresher<CompanyRecord>({
    ...deps,
    store: companies,
    grant: (record) => crm.refreshToken(record.refreshToken, "Company"),
    noun: "company",
    missing: noCompanyToken,
  });
}

/**
 * Why renewing a location through its company will not pass without the agency installing
 * again, "" when it may: no company token, one refused for good, or HighLevel refusing the
 * location's token as asked (not this company's location, or the app is no longer there).
 * A refused access token is the company's, which throughCompany has renewed already: it
 * may pass, as may a 429, an unclear answer, or no answer.
 */
function refusedThroughCompany(error: unknown): string {
  const refused = (error instanceof AppError && error.code === "NO_COMPANY_TOKEN") || refusedAsIs(error);
  return refused ? `the CRM refused this location's token through its company (${errorMessage(error)}); install the app again from the agency` : "";
}

export function noCompanyToken(companyId: string): AppError {
  return new AppError("NO_COMPANY_TOKEN", `no token for company: ${companyId}`);
}
