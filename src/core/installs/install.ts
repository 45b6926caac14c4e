import type { CompanyStore } from "../../store/contract.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { CrmClient, InstalledLocation, TokenResponse } from "../clients/crm.ts";
import { AppError, errorMessage } from "../../errors.ts";
import type { Exchanges } from "./exchanges.ts";
import type { Logger } from "../log.ts";
import type { Pacer } from "./pace.ts";

export interface InstallDeps {
  crm: CrmClient;
  tokens: LocationRegistry;
  companies: CompanyStore;
  /** Code exchanges in progress: an INSTALL webhook for a location waits for them. */
  exchanges: Exchanges;
  now: () => number;
  log: Logger;
  /** Spaces the CRM calls: it allows 100 requests per 10 s. */
  pace: Pacer;
  /** ALLOWED_COMPANY_IDS: empty lets any company install, its locations pending approval. */
  allowedCompanyIds: readonly string[];
}

/** A location an agency install could not connect, and why. */
export interface FailedLocation {
  locationId: string;
  reason: string;
}

export type InstallResult =
  | { kind: "location"; locationId: string; approved: boolean }
  | { kind: "company"; companyId: string; saved: number; total: number; failed: FailedLocation[]; approved: boolean };

/** The scopes bridge asks for at install (spec 4.1). */
export const SCOPES = [
  "conversations/message.write",
  "conversations/message.readonly",
  "conversations.write",
  "conversations.readonly",
  "contacts.readonly",
  "contacts.write",
  "locations.readonly",
] as const;

/** Where /install sends the user: the CRM's location chooser. */
export function installUrl(marketplaceUrl: string, baseUrl: string, clientId: string): string {
  const query = new URLSearchParams({
    response_type: "code",
    redirect_uri: `${baseUrl}/oauth-callback`,
    client_id: clientId,
    scope: SCOPES.join(" "),
  });
  // URLSearchParams writes spaces as "+"; the spec asks for URL-encoding proper.
  return `${marketplaceUrl}/oauth/chooselocation?${query.toString().replace(/\+/g, "%20")}`;
}

/**
 * Completes an install from an authorization code: one location, or every location
 * of a company. Errors carry the callback's HTTP status and the spec's exact texts.
 */
export async function completeInstall(deps: InstallDeps, code: string): Promise<InstallResult> {
  // Until the company token is stored, an INSTALL webhook of one of its locations would
  // find none: it waits for this part (exchanges.ts), not for the whole bulk install.
  const token = await deps.exchanges.track(() => exchangeAndKeep(deps, code));
  if (token.userType === "Company" && !token.locationId) return installCompany(deps, token);
  if (!token.locationId) {
    throw new AppError("NO_LOCATION_ID", "GHL token response did not include a locationId");
  }
  const approved = admitted(deps.allowedCompanyIds, token.companyId);
  try {
    await deps.tokens.save(record(token.locationId, token.companyId, token, deps.now()), deps.now(), approved);
  } catch (error) {
    deps.log.error(`failed to save token for location ${token.locationId}: ${errorMessage(error)}`);
    throw new AppError("SAVE_FAILED", "failed to save token", { cause: error });
  }
  deps.log.info(`installed location ${token.locationId} (company ${token.companyId || "unknown"})${pendingNote(approved)}`);
  return { kind: "location", locationId: token.locationId, approved };
}

/** The code's tokens; an admitted agency's own token is stored before this returns. */
async function exchangeAndKeep(deps: InstallDeps, code: string): Promise<TokenResponse> {
  let token: TokenResponse;
  try {
    token = await deps.crm.exchangeCode(code);
  } catch (error) {
    throw new AppError("TOKEN_EXCHANGE_FAILED", `token exchange failed: ${errorMessage(error)}`, { cause: error });
  }
  if (token.userType !== "Company" || token.locationId) return token;
  admitted(deps.allowedCompanyIds, token.companyId);
  if (!token.companyId) throw new AppError("NO_COMPANY_ID", "GHL company token response did not include a companyId");
  try {
    const { companyId, accessToken, refreshToken, expiresIn } = token;
    await deps.companies.save({ companyId, accessToken, refreshToken, expiresAt: deps.now() + expiresIn * 1000 }, deps.now());
  } catch (error) {
    // Without it the locations added later cannot be followed: say so, the install goes on.
    deps.log.error(`could not store the token of company ${token.companyId}: ${errorMessage(error)}; locations it adds later will need another install from the agency`);
  }
  return token;
}

/**
 * Who may install (docs/configuration.md, "Who may use your gateway key").
 * With ALLOWED_COMPANY_IDS set, only those companies, approved at once; anyone else is
 * refused before anything is stored. Without it, anyone (as the spec has it), but the
 * location starts pending: until an operator approves it, it sends only with its own
 * API key, never the operator's. True: approved.
 */
export function admitted(allowedCompanyIds: readonly string[], companyId: string): boolean {
  if (allowedCompanyIds.length === 0) return false;
  if (allowedCompanyIds.includes(companyId)) return true;
  throw new AppError("COMPANY_NOT_ALLOWED", `company ${companyId || "(none)"} may not install this app`);
}

export function pendingNote(approved: boolean): string {
  return approved ? "" : "; pending: it may use the global SMS_API_KEY once approved (bridge locations approve)";
}

/** Bulk install (spec 4.1): one location token per installed location; a failing one is skipped and named. */
async function installCompany(deps: InstallDeps, company: TokenResponse): Promise<InstallResult> {
  const { log } = deps;
  const companyId = company.companyId;
  const approved = admitted(deps.allowedCompanyIds, companyId);
  let locations: InstalledLocation[];
  try {
    locations = company.installedLocations.length > 0 ? company.installedLocations.map((id) => ({ id, name: "" })) : await listLocations(deps, company);
    if (locations.length === 0) throw new Error(`no locations found for company ${companyId}`);
  } catch (error) {
    throw new AppError("BULK_INSTALL_FAILED", `failed to exchange company token for location tokens: ${errorMessage(error)}`, { cause: error });
  }
  const unique = [...new Map(locations.map((l) => [l.id, l])).values()];
  const failed: FailedLocation[] = [];
  for (const location of unique) {
    const failure = await connectLocation(deps, company.accessToken, companyId, location, approved);
    if (failure) {
      log.warn(`bulk install: skipping location ${location.id}: ${failure.reason}`);
      failed.push({ locationId: location.id, reason: failure.reason });
    }
  }
  const saved = unique.length - failed.length;
  log.info(`installed company ${companyId}: ${saved} of ${unique.length} location(s) connected${pendingNote(approved)}`);
  return { kind: "company", companyId, saved, total: unique.length, failed, approved };
}

/** Why a location could not be connected; `cause`: the error met (the CRM's refusal, a refused write). */
export interface ConnectFailure {
  reason: string;
  cause: unknown;
}

/**
 * Fetches a location's token with the company's and stores it: the one path of the
 * bulk install, INSTALL webhooks and reconciliation. Undefined once stored.
 */
export async function connectLocation(
  deps: Pick<InstallDeps, "crm" | "tokens" | "now" | "pace">,
  companyToken: string,
  companyId: string,
  location: InstalledLocation,
  approved: boolean,
): Promise<ConnectFailure | undefined> {
  await deps.pace();
  let token: TokenResponse;
  try {
    token = await deps.crm.getLocationToken(companyToken, companyId, location.id);
  } catch (error) {
    return { reason: errorMessage(error), cause: error };
  }
  try {
    await deps.tokens.save({ ...record(location.id, companyId, token, deps.now()), name: location.name }, deps.now(), approved);
    return undefined;
  } catch (error) {
    return { reason: `could not save it: ${errorMessage(error)}`, cause: error };
  }
}

async function listLocations(deps: InstallDeps, company: TokenResponse): Promise<InstalledLocation[]> {
  try {
    return await deps.crm.listInstalledLocations(company.accessToken, company.companyId);
  } catch (error) {
    throw new Error(`list locations: ${errorMessage(error)}`, { cause: error });
  }
}

function record(locationId: string, companyId: string, token: TokenResponse, now: number) {
  return {
    locationId,
    companyId: token.companyId || companyId,
    accessToken: token.accessToken,
    refreshToken: token.refreshToken,
    expiresAt: now + token.expiresIn * 1000,
  };
}
