import type { LocationRegistry } from "../../store/contract.ts";
import type { Logger } from "../log.ts";
import type { TokenService } from "./tokens.ts";

/**
 * What became of an UNINSTALL. `recheck`: HighLevel accepted the token less than a minute
 * ago and is not asked again before `recheckInMs` have passed, so the event is neither
 * applied nor dismissed but left unacknowledged for HighLevel to send again: a real
 * UNINSTALL that comes right after a replayed one is applied later, not lost.
 */
export type UninstallResult = { verdict: "uninstalled" | "not_installed" | "still_installed" } | { verdict: "recheck"; recheckInMs: number };

export type UninstallVerdict = UninstallResult["verdict"];

/** What HighLevel says of an owner: installed (just now), gone, or installed when asked `recheckInMs` before the next ask. */
export type InstallState = { installed: true; recheckInMs?: number } | { installed: false };

export interface UninstallDeps {
  tokens: LocationRegistry;
  tokenService: TokenService;
  now: () => number;
  log: Logger;
}

/** An owner HighLevel just showed installed is not asked again within this. */
const RECHECK_MS = 60_000;
/** When another refresh was asking HighLevel, the event is sent again after this. */
const BUSY_RECHECK_MS = 5_000;

/**
 * UNINSTALL for a location (docs/http.md, "The webhook"). A signed UNINSTALL can be captured and
 * replayed after a reinstall, so the event alone never takes a location down: HighLevel
 * must confirm the app is gone, which it does by refusing the location's refresh token
 * (an uninstall revokes it). Then the location is marked, never deleted: its settings
 * and messages stay, and a reinstall clears the mark. When HighLevel cannot be asked,
 * this throws and the webhook is not acknowledged, so HighLevel sends it again.
 */
export function createUninstaller(deps: UninstallDeps) {
  const { tokens, tokenService, now, log } = deps;
  const stillInstalled = installCheck(tokenService.confirm, async (id) => Boolean((await tokens.get(id))?.refreshError), now);

  return async function uninstall(locationId: string): Promise<UninstallResult> {
    const record = await tokens.get(locationId);
    if (!record) return { verdict: "not_installed" };
    if (record.uninstalledAt) return { verdict: "uninstalled" };
    const state = await stillInstalled(locationId, Boolean(record.refreshError));
    if (state.installed) return stillInstalledResult(state);
    // False: another UNINSTALL marked it first, or it was removed meanwhile.
    if (!(await tokens.markUninstalled(locationId, now()))) return { verdict: (await tokens.get(locationId)) ? "uninstalled" : "not_installed" };
    log.info(`location ${locationId} uninstalled: HighLevel no longer accepts its token; its settings are kept for a reinstall`);
    return { verdict: "uninstalled" };
  };
}

/**
 * Whether HighLevel still has the app installed for a token's owner (a location, an
 * agency), asked the one way an uninstall shows: by presenting the refresh token, which
 * an uninstall revokes. Each ask spends the single-use refresh token, so an owner just
 * shown installed is not asked again within RECHECK_MS: a flood of replayed UNINSTALLs
 * makes one call a minute; within it the answer says when HighLevel may be asked again
 * (`recheckInMs`). Only an ask that starts here may say "installed": `confirm(id)` gives
 * undefined when another refresh (begun, perhaps, before the UNINSTALL arrived) was
 * asking, and its "installed" may predate the uninstall, so the answer is to ask again
 * shortly. `refusedBefore`: the stored token was refused already, so nothing is asked.
 * `refused(id)` reads the refusal a failed ask leaves on the record. Throws when
 * HighLevel cannot be asked.
 */
export function installCheck(
  confirm: (id: string) => Promise<unknown>,
  refused: (id: string) => Promise<boolean>,
  now: () => number,
): (id: string, refusedBefore: boolean) => Promise<InstallState> {
  const installedAt = new Map<string, number>();
  return async function stillInstalled(id, refusedBefore) {
    if (!refusedBefore) {
      const since = now() - (installedAt.get(id) ?? -Infinity);
      if (since < RECHECK_MS) return { installed: true, recheckInMs: RECHECK_MS - since };
      try {
        if ((await confirm(id)) === undefined) return { installed: true, recheckInMs: BUSY_RECHECK_MS };
        installedAt.set(id, now());
        return { installed: true };
      } catch (error) {
        // Refused for good: the refusal is now on the record. Anything else may pass.
        if (!(await refused(id))) throw error;
      }
    }
    installedAt.delete(id);
    return { installed: false };
  };
}

/** Installed as HighLevel said just now, or as it said under a minute ago: then ask again later. */
export function stillInstalledResult(state: Extract<InstallState, { installed: true }>): UninstallResult {
  return state.recheckInMs === undefined ? { verdict: "still_installed" } : { verdict: "recheck", recheckInMs: state.recheckInMs };
}

export type Uninstaller = ReturnType<typeof createUninstaller>;
