import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, printable, type Io } from "./io.ts";

/** `bridge doctor [--json]`: what is wrong with this installation, and what to do; exit 1 on any fail. */
export function doctorCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("doctor")
    .description("check the configuration, the database, HighLevel and Cast.ph: one line per check (ok, warn, fail)")
    .option("--json", 'machine-readable output: {"ok", "checks": [{"check", "status", "detail"}]}')
    .action(async (options: { json?: boolean }) => {
      const [{ commandEnv }, { openDb }, { runDoctor }] = await Promise.all([
        import("./context.ts"),
        import("../db/index.ts"),
        import("../sea/heavy.ts"),
      ]);
      const report = await runDoctor({ env: commandEnv(io, globals()), openDb });
      if (options.json) io.out(json(report));
      else for (const c of report.checks) io.out(`${c.status.padEnd(4)}  ${c.check}: ${printable(c.detail)}\n`);
      const failed = report.checks.filter((c) => c.status === "fail").length;
      if (failed > 0) throw new Error(`${failed} check(s) failed`);
    });
}
