import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { printable, UsageError, type Io } from "./io.ts";

/** `bridge alerts test`: posts one alert to ALERT_WEBHOOK_URL now (docs/alerts.md). */
export function alertsCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const alerts = program.command("alerts").description("alerts to a person through ALERT_WEBHOOK_URL (Slack, Mattermost, Discord's /slack)");
  alerts
    .command("test")
    .description("post one test alert to ALERT_WEBHOOK_URL now, and say whether the webhook took it")
    .action(async () => {
      const [{ withStore }, { sendTestAlert }] = await Promise.all([import("./context.ts"), import("../sea/heavy.ts")]);
      const sent = await withStore(io, globals(), async ({ alertStore }, config) => {
        if (!config.alertWebhookUrl) throw new UsageError("ALERT_WEBHOOK_URL is not set: set it to an incoming webhook's URL (docs/alerts.md)");
        return sendTestAlert(config, alertStore);
      });
      if (!sent.ok) throw new Error(`the webhook did not take the test alert: ${sent.reason}`);
      io.out(`sent: ${printable(sent.text)}\n`);
    });
}
