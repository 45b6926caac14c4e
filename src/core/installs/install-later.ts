import { errorMessage } from "../../errors.ts";
import { mayPassLater } from "../retry-policy.ts";
import { admitted, connectLocation, pendingNote, type InstallDeps } from "./install.ts";
import type { CompanyTokens } from "./tokens.ts";

export interface LaterInstallDeps extends InstallDeps {
  companyTokens: CompanyTokens;
  /** How long an INSTALL waits for a code exchange in progress. */
  waitMs?: number;
}

/**
 * How an INSTALL ended. "retry": not done, for a reason that may pass (HighLevel
 * retries a 429); "refused": the company may not install; "not_connected": HighLevel
 * refused every stored company's request for the location's token.
 */
export type LaterVerdict = "installed" | "already_installed" | "refused" | "not_connected" | "retry";

export type LaterInstaller = ReturnType<typeof createLaterInstaller>;

/**
 * A location HighLevel installed the app into after the agency's own install
 * (`installToFutureLocations`): its token comes from a stored company token through
 * /oauth/locationToken. HighLevel may send the INSTALL before the agency's code
 * exchange has finished, and sometimes without a companyId; neither loses it.
 */
export function createLaterInstaller(deps: LaterInstallDeps) {
  const { tokens, companies, exchanges, log, allowedCompanyIds } = deps;
  const waitMs = deps.waitMs ?? 15_000;
  // The same INSTALL delivered twice at once fetches one token.
  const inflight = new Map<string, Promise<LaterVerdict>>();

  /** Stored companies that may install, the named one only when the event names one. */
  async function candidates(companyId: string | undefined): Promise<string[]> {
    const ids = companyId ? (await companies.get(companyId) ? [companyId] : []) : await companies.ids();
    return allowedCompanyIds.length === 0 ? ids : ids.filter((id) => allowedCompanyIds.includes(id));
  }

  async function installed(locationId: string): Promise<boolean> {
    const record = await tokens.get(locationId);
    return Boolean(record && !record.uninstalledAt && !record.refreshError);
  }

  async function install(locationId: string, companyId: string | undefined): Promise<LaterVerdict> {
    const what = `location ${locationId}`;
    if (companyId) {
      try {
        admitted(allowedCompanyIds, companyId);
      } catch (error) {
        log.warn(`INSTALL of ${what} refused: ${errorMessage(error)}`);
        return "refused";
      }
    }
    // A repeated INSTALL, or one the OAuth callback already served: nothing to do.
    if (await installed(locationId)) return "already_installed";
    let companyIds = await candidates(companyId);
    if (companyIds.length === 0 && (await exchanges.active()) > 0) {
      log.info(`INSTALL of ${what} waits for an install in progress to store its token`);
      await exchanges.settled(waitMs);
      if (await installed(locationId)) return "already_installed";
      companyIds = await candidates(companyId);
    }
    if (companyIds.length === 0) {
      const whose = companyId ? `company ${companyId}` : "any agency";
      log.warn(`INSTALL of ${what} not applied yet: bridge holds no token of ${whose}; HighLevel will send it again. If it keeps coming back, install the app again from the agency (Marketplace, agency level), then run \`bridge locations sync\``);
      return "retry";
    }
    return connectThroughAny(deps, locationId, companyIds);
  }

  return function installLocation(locationId: string, companyId?: string): Promise<LaterVerdict> {
    const running = inflight.get(locationId);
    if (running) return running;
    const started = install(locationId, companyId).finally(() => inflight.delete(locationId));
    inflight.set(locationId, started);
    return started;
  };
}

/** The location's token through each stored company in turn; "retry" when a failure may pass. */
async function connectThroughAny(deps: LaterInstallDeps, locationId: string, companyIds: string[]): Promise<LaterVerdict> {
  const { companies, log, allowedCompanyIds } = deps;
  const reasons: string[] = [];
  let passing = false;
  for (const companyId of companyIds) {
    let company;
    try {
      company = await deps.companyTokens.validToken(companyId);
    } catch (error) {
      // Refused for good when the refusal is now on the record; anything else may pass.
      passing ||= !(await companies.get(companyId))?.refreshError;
      reasons.push(`company ${companyId}: ${errorMessage(error)}`);
      continue;
    }
    const approved = admitted(allowedCompanyIds, companyId);
    const failure = await connectLocation(deps, company.accessToken, companyId, { id: locationId, name: "" }, approved);
    if (!failure) {
      log.info(`installed location ${locationId} (company ${companyId}) from an INSTALL webhook${pendingNote(approved)}`);
      return "installed";
    }
    // A refusal says no (not this company's location, app not installed there); anything else may pass.
    passing ||= mayPassLater(failure.cause);
    reasons.push(`company ${companyId}: ${failure.reason}`);
  }
  const why = reasons.join("; ");
  if (passing) {
    log.warn(`INSTALL of location ${locationId} not applied yet (${why}); HighLevel will send it again`);
    return "retry";
  }
  log.warn(`INSTALL of location ${locationId} not applied: HighLevel refused its token (${why}); the next \`bridge locations sync\` tries again`);
  return "not_connected";
}
