import { wallClock } from "../clock.ts";
import type { AlertStore } from "../../store/contract.ts";
import { postAlert, type AlertPost } from "../clients/alert-webhook.ts";
import type { ResolvedConfig } from "../config.ts";
import { bridgeName } from "../alert-channel.ts";

/**
 * `bridge alerts test`: one alert posted to ALERT_WEBHOOK_URL now, from this process, so
 * the operator sees at once whether the channel works; recorded as delivered when it
 * did (status's "last delivered"). Not queued when it fails: the answer is the point.
 */
export async function sendTestAlert(
  config: Pick<ResolvedConfig, "alertWebhookUrl" | "baseUrl">,
  alerts: Pick<AlertStore, "test">,
  now: () => number = wallClock,
): Promise<AlertPost & { text: string }> {
  const text = `${bridgeName(config.baseUrl)}: a test alert (\`bridge alerts test\`): alerts reach this channel.`;
  const post = await postAlert(config.alertWebhookUrl, text, now);
  if (post.ok) await alerts.test(text, now(), true);
  return { ...post, text };
}
