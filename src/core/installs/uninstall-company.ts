import type { CompanyStore } from "../../store/contract.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { Logger } from "../log.ts";
import type { CompanyTokens } from "./tokens.ts";
import { installCheck, stillInstalledResult, type UninstallResult, type Uninstaller } from "./uninstall.ts";

/** As a location's, with how many of the company's locations this UNINSTALL marked. */
export type CompanyUninstallResult = UninstallResult & { marked: number };

export interface CompanyUninstallDeps {
  tokens: LocationRegistry;
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
  const stillInstalled = installCheck(companyTokens.confirm, async (id) => Boolean((await companies.get(id))?.refreshError), now);

  return async function uninstallCompany(companyId: string): Promise<CompanyUninstallResult> {
    const company = await companies.get(companyId);
    if (!company) return eachLocation(companyId);
    const state = await stillInstalled(companyId, Boolean(company.refreshError));
    if (state.installed) return { ...stillInstalledResult(state), marked: 0 };
    await companies.delete(companyId);
    let marked = 0;
    for (const location of await tokens.ofCompany(companyId)) if (await tokens.markUninstalled(location.locationId, now())) marked++;
    log.info(`company ${companyId} uninstalled the app: HighLevel no longer accepts its token; its token removed, ${marked} location(s) marked uninstalled (settings kept for a reinstall)`);
    return { verdict: "uninstalled", marked };
  };

  /**
   * Each location confirmed with its own token. One HighLevel showed installed under a
   * minute ago makes the whole event `recheck`, even when others were marked: sent
   * again, it finds those marked already and asks only for the rest.
   */
  async function eachLocation(companyId: string): Promise<CompanyUninstallResult> {
    const installed = (await tokens.ofCompany(companyId)).filter((l) => !l.uninstalledAt);
    if (installed.length === 0) return { verdict: "not_installed", marked: 0 };
    let marked = 0;
    let recheckInMs = 0;
    for (const { locationId } of installed) {
      const result = await uninstall(locationId);
      if (result.verdict === "uninstalled") marked++;
      if (result.verdict === "recheck") recheckInMs = Math.max(recheckInMs, result.recheckInMs);
    }
    if (marked > 0) log.info(`company ${companyId} uninstalled the app: ${marked} of ${installed.length} location(s) confirmed and marked uninstalled`);
    if (recheckInMs > 0) return { verdict: "recheck", recheckInMs, marked };
    return { verdict: marked > 0 ? "uninstalled" : "still_installed", marked };
  }
}

export type CompanyUninstaller = ReturnType<typeof createCompanyUninstaller>;
