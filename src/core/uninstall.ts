import type { TokenStore } from "../db/tokens.ts";
import type { Logger } from "./log.ts";
import type { TokenService } from "./tokens.ts";

export type UninstallVerdict = "uninstalled" | "not_installed" | "still_installed";

export interface UninstallDeps {
  tokens: TokenStore;
  tokenService: TokenService;
  now: () => number;
  log: Logger;
}

/** An owner HighLevel just showed installed is not asked again within this. */
const RECHECK_MS = 60_000;

/**
 * UNINSTALL for a location (CONTRACT.md 12). A signed UNINSTALL can be captured and
 * replayed after a reinstall, so the event alone never takes a location down: HighLevel
 * must confirm the app is gone, which it does by refusing the location's refresh token
 * (an uninstall revokes it). Then the location is marked, never deleted: its settings
 * and messages stay, and a reinstall clears the mark. When HighLevel cannot be asked,
 * this throws and the webhook is not acknowledged, so HighLevel sends it again.
 */
export function createUninstaller(deps: UninstallDeps) {
  const { tokens, tokenService, now, log } = deps;
  const stillInstalled = installCheck(tokenService.refresh, (id) => Boolean(tokens.get(id)?.refreshError), now);

  return async function uninstall(locationId: string): Promise<UninstallVerdict> {
    const record = tokens.get(locationId);
    if (!record) return "not_installed";
    if (record.uninstalledAt) return "uninstalled";
    if (await stillInstalled(locationId, Boolean(record.refreshError))) return "still_installed";
    // False: another UNINSTALL marked it first, or it was removed meanwhile.
    if (!tokens.markUninstalled(locationId, now())) return tokens.get(locationId) ? "uninstalled" : "not_installed";
    log.info(`location ${locationId} uninstalled: HighLevel no longer accepts its token; its settings are kept for a reinstall`);
    return "uninstalled";
  };
}

/**
 * Whether HighLevel still has the app installed for a token's owner (a location, an
 * agency), asked the one way an uninstall shows: by presenting the refresh token, which
 * an uninstall revokes. Each ask spends the single-use refresh token, so an owner just
 * shown installed is not asked again within RECHECK_MS: a flood of replayed UNINSTALLs
 * makes one call a minute. `refusedBefore`: the stored token was refused already, so
 * nothing is asked. `refused(id)` reads the refusal a failed ask leaves on the record.
 * Throws when HighLevel cannot be asked.
 */
export function installCheck(
  refresh: (id: string, force: boolean) => Promise<unknown>,
  refused: (id: string) => boolean,
  now: () => number,
): (id: string, refusedBefore: boolean) => Promise<boolean> {
  const installedAt = new Map<string, number>();
  return async function stillInstalled(id, refusedBefore) {
    if (!refusedBefore) {
      if (now() - (installedAt.get(id) ?? -Infinity) < RECHECK_MS) return true;
      try {
        await refresh(id, true);
        installedAt.set(id, now());
        return true;
      } catch (error) {
        // Refused for good: the refusal is now on the record. Anything else may pass.
        if (!refused(id)) throw error;
      }
    }
    installedAt.delete(id);
    return false;
  };
}

export type Uninstaller = ReturnType<typeof createUninstaller>;
