import type { AlertStore } from "../../../store/contract.ts";
import { alertChannel, describeChannel } from "../../alert-channel.ts";
import type { ResolvedConfig } from "../../config.ts";
import { ok, warn, type Check } from "./check.ts";

/**
 * The alert channel (docs/alerts.md): unset is a warning, as nobody is told when
 * something needs a person; so is a channel whose latest try failed. Doctor posts
 * nothing itself: `bridge alerts test` does.
 */
export async function checkAlerts(config: Pick<ResolvedConfig, "alertWebhookUrl">, alerts: Pick<AlertStore, "health">): Promise<Check> {
  const channel = await alertChannel(config, alerts);
  const detail = describeChannel(channel);
  if (!channel.configured) return warn("alerts", "ALERT_WEBHOOK_URL not set: nobody is told when something needs a person (docs/alerts.md)");
  if (channel.last_error) return warn("alerts", `${detail}; \`bridge alerts test\` tries the webhook now`);
  return ok("alerts", detail);
}
