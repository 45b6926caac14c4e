import type { CompanyStore } from "../../store/contract.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { CrmClient, InstalledLocation } from "../clients/crm.ts";
import { errorMessage } from "../../errors.ts";
import { admitted, connectLocation } from "./install.ts";
import type { Logger } from "../log.ts";
import type { Pacer } from "./pace.ts";
import type { CompanyTokens } from "./tokens.ts";

/** One company's reconciliation, in the field names of `--json`. */
export interface CompanySync {
  company_id: string;
  /** Locations HighLevel lists with the app installed. */
  installed: number;
  added: string[];
  /** No longer listed: marked uninstalled (kept, with their messages). */
  marked_uninstalled: string[];
  failed: { location_id: string; error: string }[];
  /** Why the company itself could not be reconciled; absent when it was. */
  error?: string;
}

export interface SyncProgress {
  companyId: string;
  done: number;
  total: number;
}

export interface SyncOptions {
  /** Told before each location token is fetched. */
  progress?: (at: SyncProgress) => void;
  /** Stops between locations (serve shutting down). */
  signal?: AbortSignal;
}

export interface SyncDeps {
  crm: CrmClient;
  tokens: LocationRegistry;
  companies: CompanyStore;
  companyTokens: CompanyTokens;
  pace: Pacer;
  now: () => number;
  log: Logger;
  allowedCompanyIds: readonly string[];
}

export type Sync = ReturnType<typeof createSync>;

/**
 * Reconciliation (docs/operations.md, "Agencies: what you do once, and what happens by itself after"):
 * each stored company's installedLocations compared with the store. Locations listed
 * but missing (or uninstalled, or whose token was refused) get a token through the
 * company's; stored ones no longer listed are marked uninstalled, never deleted.
 * HighLevel's own list, fetched with the agency's token, is the confirmation a mark
 * waits for (a replayed UNINSTALL must not take a location down). One run at a time
 * per process: a second caller shares the running one.
 */
export function createSync(deps: SyncDeps) {
  const { companies, log } = deps;
  let running: Promise<CompanySync[]> | undefined;

  async function run(options: SyncOptions): Promise<CompanySync[]> {
    const results: CompanySync[] = [];
    for (const companyId of await companies.ids()) {
      if (options.signal?.aborted) break;
      results.push(await syncCompany(deps, companyId, options));
    }
    return results;
  }

  return function sync(options: SyncOptions = {}): Promise<CompanySync[]> {
    running ??= run(options).finally(() => (running = undefined));
    return running.then((results) => {
      for (const r of results) if (r.error) log.warn(`sync of company ${r.company_id} not done: ${r.error}`);
      return results;
    });
  };
}

async function syncCompany(deps: SyncDeps, companyId: string, options: SyncOptions): Promise<CompanySync> {
  const { tokens, log, allowedCompanyIds } = deps;
  const result: CompanySync = { company_id: companyId, installed: 0, added: [], marked_uninstalled: [], failed: [] };
  if (allowedCompanyIds.length > 0 && !allowedCompanyIds.includes(companyId)) {
    result.error = `company ${companyId} may not install this app (not in ALLOWED_COMPANY_IDS); nothing added`;
    return result;
  }
  let companyToken: string;
  let listed: InstalledLocation[];
  try {
    companyToken = (await deps.companyTokens.validToken(companyId)).accessToken;
    await deps.pace();
    listed = await deps.crm.listInstalledLocations(companyToken, companyId);
  } catch (error) {
    result.error = errorMessage(error);
    return result;
  }
  result.installed = listed.length;
  const stored = new Map((await tokens.ofCompany(companyId)).map((l) => [l.locationId, l]));
  const missing = listed.filter((l) => {
    const known = stored.get(l.id);
    return !known || known.uninstalledAt > 0 || known.refreshError !== "";
  });
  for (const l of listed) await tokens.setName(l.id, l.name);
  const approved = admitted(allowedCompanyIds, companyId);
  for (const [done, location] of missing.entries()) {
    if (options.signal?.aborted) return result;
    options.progress?.({ companyId, done, total: missing.length });
    const failure = await connectLocation(deps, companyToken, companyId, location, approved);
    if (failure) result.failed.push({ location_id: location.id, error: failure.reason });
    else result.added.push(location.id);
  }
  const listedIds = new Set(listed.map((l) => l.id));
  for (const known of stored.values()) {
    if (!known.uninstalledAt && !listedIds.has(known.locationId) && await tokens.markUninstalled(known.locationId, deps.now())) {
      result.marked_uninstalled.push(known.locationId);
    }
  }
  const { added, marked_uninstalled: marked, failed } = result;
  const line = `sync of company ${companyId}: ${listed.length} installed in HighLevel; ${added.length} added, ${marked.length} marked uninstalled, ${failed.length} failed`;
  if (added.length + marked.length + failed.length > 0) log.info(`${line}${detail(result)}`);
  else log.debug(line);
  return result;
}

function detail({ added, marked_uninstalled, failed }: CompanySync): string {
  const parts = [
    added.length ? `added ${added.join(", ")}` : "",
    marked_uninstalled.length ? `marked ${marked_uninstalled.join(", ")}` : "",
    ...failed.map((f) => `${f.location_id} failed: ${f.error}`),
  ].filter(Boolean);
  return parts.length ? ` (${parts.join("; ")})` : "";
}

/**
 * Runs `sync` every `everyMs` (the first run after `firstMs`) when this server `leads`
 * the periodic work (with several servers, one does it), logging what fails;
 * `stop` ends the timer and waits for a run in progress to stop between locations.
 */
export function scheduleSync(sync: Sync, log: Logger, everyMs: number, firstMs: number, leads: () => boolean = () => true) {
  const abort = new AbortController();
  let current: Promise<unknown> = Promise.resolve();
  const tick = () => {
    if (leads()) current = sync({ signal: abort.signal }).catch((error: unknown) => log.error(`sync failed: ${errorMessage(error)}`));
    timer = setTimeout(tick, everyMs).unref();
  };
  let timer = setTimeout(tick, firstMs).unref();
  return {
    async stop(): Promise<void> {
      clearTimeout(timer);
      abort.abort();
      await current;
    },
  };
}
