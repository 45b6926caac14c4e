import type { CompanyStore } from "../db/companies.ts";
import type { TokenStore } from "../db/tokens.ts";
import type { Logger } from "./log.ts";
import type { CompanyTokens } from "./tokens.ts";
import { installCheck, type Uninstaller } from "./uninstall.ts";

export type CompanyUninstallVerdict = "uninstalled" | "not_installed" | "still_installed";

export interface CompanyUninstallDeps {
  tokens: TokenStore;
  companies: CompanyStore;
  companyTokens: CompanyTokens;
  /** The location UNINSTALL, which confirms with the location's own token. */
  uninstall: Uninstaller;
  now: () => number;
  log: Logger;
}

/**
 * UNINSTALL of an agency (no locationId). As for a location, the event alone never
 * takes anything down: a captured one can be replayed after the agency reinstalls.
 * HighLevel confirms by refusing the agency's refresh token, which an agency-level
 * uninstall revokes; then the company token is removed and each of its locations
 * is marked uninstalled (kept, with settings and messages), since an agency uninstall
 * takes the app from all its sub-accounts. This check was chosen over listing
 * installedLocations: the list needs the very token an uninstall revokes, so it
 * could only ever answer "not sure". Without a company token (an agency that
 * installed location by location), each location is confirmed with its own token.
 * When HighLevel cannot be asked, this throws, so the webhook is sent again.
 */
export function createCompanyUninstaller(deps: CompanyUninstallDeps) {
  const { tokens, companies, companyTokens, uninstall, now, log } = deps;
  const stillInstalled = installCheck(companyTokens.refresh, (id) => Boolean(companies.get(id)?.refreshError), now);

  return async function uninstallCompany(companyId: string): Promise<{ verdict: CompanyUninstallVerdict; marked: number }> {
    const company = companies.get(companyId);
    if (!company) return eachLocation(companyId);
    if (await stillInstalled(companyId, Boolean(company.refreshError))) return { verdict: "still_installed", marked: 0 };
    companies.delete(companyId);
    let marked = 0;
    for (const location of tokens.ofCompany(companyId)) if (tokens.markUninstalled(location.locationId, now())) marked++;
    log.info(`company ${companyId} uninstalled the app: HighLevel no longer accepts its token; its token removed, ${marked} location(s) marked uninstalled (settings kept for a reinstall)`);
    return { verdict: "uninstalled", marked };
  };

  async function eachLocation(companyId: string): Promise<{ verdict: CompanyUninstallVerdict; marked: number }> {
    const installed = tokens.ofCompany(companyId).filter((l) => !l.uninstalledAt);
    if (installed.length === 0) return { verdict: "not_installed", marked: 0 };
    let marked = 0;
    for (const { locationId } of installed) if ((await uninstall(locationId)) === "uninstalled") marked++;
    if (marked > 0) log.info(`company ${companyId} uninstalled the app: ${marked} of ${installed.length} location(s) confirmed and marked uninstalled`);
    return { verdict: marked > 0 ? "uninstalled" : "still_installed", marked };
  }
}

export type CompanyUninstaller = ReturnType<typeof createCompanyUninstaller>;
