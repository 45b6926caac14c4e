import type { TokenRecord } from "../../../store/types.ts";
import { reach } from "../../clients/probe.ts";
import type { ResolvedConfig } from "../../config.ts";
import { errorMessage } from "../../../errors.ts";
import type { TokenService } from "../../installs/tokens.ts";
import { fail, ok, warn, type Check } from "./check.ts";
import { iso } from "../../duration.ts";

/** HighLevel's API answers at all; the network path is what this checks. */
export async function checkHighLevelReach(config: ResolvedConfig, timeoutMs: number, checks: Check[]): Promise<void> {
  const found = await reach(config.crm.apiUrl, timeoutMs);
  checks.push(
    found.ok
      ? ok("HighLevel reachable", `${config.crm.apiUrl} answered (HTTP ${found.status}) in ${found.ms} ms`)
      : fail("HighLevel reachable", `${config.crm.apiUrl}: ${found.kind} (${found.detail}); check DNS, firewall, proxy and CRM_API_URL`),
  );
}

/**
 * Each location's token, through the server's own path (`validToken`): it refreshes only
 * a token within 5 minutes of expiry, and a running server's refresh is shared through
 * the lease, so doctor never spends a refresh token the server is using.
 */
export async function checkTokens(records: TokenRecord[], tokenService: TokenService, checks: Check[]): Promise<void> {
  for (const record of records) {
    const name = `HighLevel token ${record.locationId}`;
    if (record.uninstalledAt) {
      checks.push(warn(name, `the app was uninstalled ${iso(record.uninstalledAt)}: its messages are reported failed; reinstall the app there to use it again`));
    } else if (record.refreshError) {
      checks.push(fail(name, `needs a reinstall: ${record.refreshError}`));
    } else {
      try {
        const valid = await tokenService.validToken(record.locationId);
        checks.push(ok(name, `access token valid until ${iso(valid.expiresAt)}`));
      } catch (error) {
        checks.push(fail(name, `${errorMessage(error)}; see the log of bridge serve, or reinstall the app for this location`));
      }
    }
  }
}
