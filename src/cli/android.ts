import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, locationArg, printable, type Io } from "./io.ts";

/** `bridge android register <locationId>`: the phone a location sends through posts its webhooks to bridge (docs/android.md). */
export function androidCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const android = program.command("android").description("phones running SMS Gateway for Android (a location's gateway android)");
  android
    .command("register <locationId>")
    .description("register BASE_URL/webhooks/android on the location's phone for sms:received, sms:sent, sms:delivered, sms:failed (BASE_URL must be https://, or http://127.0.0.1:PORT for a phone reaching it through its own loopback)")
    .option("--json", "machine-readable output")
    .action(async (locationId: string, options: { json?: boolean }) => {
      locationArg(locationId);
      const [{ withStore }, { phoneOf, registerPhone }] = await Promise.all([import("./context.ts"), import("../sea/heavy.ts")]);
      const { settings, baseUrl } = await withStore(io, globals(), async ({ phones }, config) => ({ settings: await phoneOf(phones, locationId), baseUrl: config.baseUrl }));
      const hooks = await registerPhone(settings, baseUrl);
      if (options.json) return io.out(json({ location_id: locationId, device: settings.deviceId, webhooks: hooks }));
      for (const hook of hooks) io.out(`registered ${hook.event} -> ${printable(hook.url)} (id ${hook.id}) on phone ${printable(settings.deviceId)}\n`);
    });
}
