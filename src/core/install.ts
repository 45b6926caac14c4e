import type { TokenStore } from "../db/tokens.ts";
import type { CrmClient, TokenResponse } from "./clients/crm.ts";
import { AppError, errorMessage } from "./errors.ts";
import type { Logger } from "./log.ts";
import { sleep } from "./retry.ts";

export interface InstallDeps {
  crm: CrmClient;
  tokens: TokenStore;
  now: () => number;
  log: Logger;
  /** Gap between locationToken calls: the CRM allows 100 requests per 10 s. */
  paceMs?: number;
  /** ALLOWED_COMPANY_IDS: empty lets any company install, its locations pending approval. */
  allowedCompanyIds: readonly string[];
}

export type InstallResult =
  | { kind: "location"; locationId: string }
  | { kind: "company"; companyId: string; saved: number; total: number };

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
  let token: TokenResponse;
  try {
    token = await deps.crm.exchangeCode(code);
  } catch (error) {
    throw new AppError("TOKEN_EXCHANGE_FAILED", `token exchange failed: ${errorMessage(error)}`, { status: 500, cause: error });
  }
  if (token.userType === "Company" && !token.locationId) return installCompany(deps, token);
  if (!token.locationId) {
    throw new AppError("NO_LOCATION_ID", "GHL token response did not include a locationId", { status: 400 });
  }
  const approved = admitted(deps, token.companyId);
  try {
    deps.tokens.save(record(token.locationId, token.companyId, token, deps.now()), deps.now(), approved);
  } catch (error) {
    deps.log.error(`failed to save token for location ${token.locationId}: ${errorMessage(error)}`);
    throw new AppError("SAVE_FAILED", "failed to save token", { status: 500, cause: error });
  }
  deps.log.info(`installed location ${token.locationId} (company ${token.companyId || "unknown"})${pendingNote(approved)}`);
  return { kind: "location", locationId: token.locationId };
}

/**
 * Who may install (CONTRACT.md 12). With ALLOWED_COMPANY_IDS set, only those companies,
 * approved at once; anyone else is refused before anything is stored. Without it, anyone
 * (as the spec has it), but the location starts pending: until an operator approves it,
 * it sends only with its own API key, never the operator's. True: approved.
 */
function admitted(deps: InstallDeps, companyId: string): boolean {
  if (deps.allowedCompanyIds.length === 0) return false;
  if (deps.allowedCompanyIds.includes(companyId)) return true;
  throw new AppError("COMPANY_NOT_ALLOWED", `company ${companyId || "(none)"} may not install this app`, { status: 403 });
}

function pendingNote(approved: boolean): string {
  return approved ? "" : "; pending: it may use the global SMS_API_KEY once approved (bridge locations approve)";
}

/** Bulk install (spec 4.1): one location token per installed location; a failing one is skipped. */
async function installCompany(deps: InstallDeps, company: TokenResponse): Promise<InstallResult> {
  const { crm, log, tokens } = deps;
  const companyId = company.companyId;
  const approved = admitted(deps, companyId);
  let ids: string[];
  try {
    ids = company.installedLocations.length > 0 ? company.installedLocations : await listLocations(deps, company);
    if (ids.length === 0) throw new Error(`no locations found for company ${companyId}`);
  } catch (error) {
    throw new AppError("BULK_INSTALL_FAILED", `failed to exchange company token for location tokens: ${errorMessage(error)}`, {
      status: 500,
      cause: error,
    });
  }
  const unique = [...new Set(ids)];
  let saved = 0;
  for (const [i, locationId] of unique.entries()) {
    if (i > 0) await sleep(deps.paceMs ?? 110);
    let token: TokenResponse;
    try {
      token = await crm.getLocationToken(company.accessToken, companyId, locationId);
    } catch (error) {
      log.warn(`bulk install: skipping location ${locationId}: ${errorMessage(error)}`);
      continue;
    }
    try {
      tokens.save(record(locationId, companyId, token, deps.now()), deps.now(), approved);
      saved++;
    } catch (error) {
      log.warn(`bulk install: could not save location ${locationId}: ${errorMessage(error)}`);
    }
  }
  log.info(`installed company ${companyId}: ${saved} of ${unique.length} location(s) connected${pendingNote(approved)}`);
  return { kind: "company", companyId, saved, total: unique.length };
}

async function listLocations(deps: InstallDeps, company: TokenResponse): Promise<string[]> {
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
