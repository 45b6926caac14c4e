import type { Command } from "commander";
import { backupCommand } from "./backup.ts";
import type { GlobalOptions } from "./context.ts";
import { doctorCommand } from "./doctor.ts";
import type { Io } from "./io.ts";
import { migrateCommand } from "./migrate.ts";
import { rekeyCommand } from "./rekey.ts";

/** The operator's commands on the database as a whole: upgrades, backups, checks, key rotation. */
export function opsCommands(program: Command, io: Io, globals: () => GlobalOptions): void {
  migrateCommand(program, io, globals);
  backupCommand(program, io, globals);
  doctorCommand(program, io, globals);
  rekeyCommand(program, io, globals);
}
