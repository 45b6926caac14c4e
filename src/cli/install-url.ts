import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import type { Io } from "./io.ts";

/** `bridge install-url`: the URL that starts an install, and nothing else, for scripts. */
export function installUrlCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("install-url")
    .description("print the URL that installs bridge into a CRM location (needs BASE_URL, CRM_CLIENT_ID)")
    .action(async () => {
      const [{ commandConfig }, { installUrl }] = await Promise.all([import("./context.ts"), import("../core/installs/install.ts")]);
      const config = commandConfig(io, globals(), "install-url");
      io.out(`${installUrl(config.crm.marketplaceUrl, config.baseUrl, config.crm.clientId)}\n`);
    });
}
