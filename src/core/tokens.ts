import type { CompanyRecord, CompanyStore } from "../db/companies.ts";
import type { TokenRecord, TokenStore } from "../db/tokens.ts";
import type { CrmClient } from "./clients/crm.ts";
import { AppError, noToken } from "../errors.ts";
import type { Logger } from "./log.ts";
import { createRefresher } from "./refresh.ts";

export { needsRefresh, REFRESH_MARGIN_MS } from "./refresh.ts";

export interface TokenServiceDeps {
  tokens: TokenStore;
  crm: CrmClient;
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
 */
export function createTokenService(deps: TokenServiceDeps) {
  const { tokens, crm, now } = deps;
  const { validToken, refresh } = createRefresher<TokenRecord>({
    ...deps,
    store: tokens,
    grant: (refreshToken) => crm.refreshToken(refreshToken, "Location"),
    noun: "location",
    missing: noToken,
  });
  // Per location, when a 401 last made us fetch a new token. If the CRM refuses that
  // one too, the token is not the problem (HighLevel also answers 401 for a missing scope).
  const renewedAfter401 = new Map<string, number>();

  return {
    /** The location's record with an access token good for at least 5 more minutes. */
    validToken,
    /** Refreshes now if needed, or always with `force` (the CLI's `token refresh --force`), even a token refused before. */
    refresh,
    /**
     * The CRM answered 401 to `accessToken`: fetch a new one. Not when the location
     * already holds a newer one, nor more than once in RENEW_401_MS per location:
     * every refresh spends the single-use refresh token.
     */
    async rejected(locationId: string, accessToken: string): Promise<void> {
      const current = tokens.get(locationId);
      if (!current || current.accessToken !== accessToken || current.refreshError) return;
      if (now() - (renewedAfter401.get(locationId) ?? -Infinity) < RENEW_401_MS) return;
      renewedAfter401.set(locationId, now());
      await refresh(locationId, true);
    },
  };
}

export interface CompanyTokenDeps extends Omit<TokenServiceDeps, "tokens"> {
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
    grant: (refreshToken) => crm.refreshToken(refreshToken, "Company"),
    noun: "company",
    missing: noCompanyToken,
  });
}

export function noCompanyToken(companyId: string): AppError {
  return new AppError("NO_COMPANY_TOKEN", `no token for company: ${companyId}`);
}
