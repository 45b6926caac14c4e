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

/** A location HighLevel just showed installed is not asked again within this. */
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
  const stillInstalledAt = new Map<string, number>();

  return async function uninstall(locationId: string): Promise<UninstallVerdict> {
    const record = tokens.get(locationId);
    if (!record) return "not_installed";
    if (record.uninstalledAt) return "uninstalled";
    if (!record.refreshError) {
      // Each check spends a single-use refresh token: a flood of replays makes one call a minute.
      if (now() - (stillInstalledAt.get(locationId) ?? -Infinity) < RECHECK_MS) return "still_installed";
      try {
        await tokenService.refresh(locationId, true);
        stillInstalledAt.set(locationId, now());
        return "still_installed";
      } catch (error) {
        // Refused for good: the refresh error is now on the record. Anything else may pass.
        if (!tokens.get(locationId)?.refreshError) throw error;
      }
    }
    stillInstalledAt.delete(locationId);
    // False: another UNINSTALL marked it first, or it was removed meanwhile.
    if (!tokens.markUninstalled(locationId, now())) return tokens.get(locationId) ? "uninstalled" : "not_installed";
    log.info(`location ${locationId} uninstalled: HighLevel no longer accepts its token; its settings are kept for a reinstall`);
    return "uninstalled";
  };
}

export type Uninstaller = ReturnType<typeof createUninstaller>;
