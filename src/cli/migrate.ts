import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, type Io } from "./io.ts";

/** `bridge migrate [--json]`: what a new `serve` does first, without starting it. */
export function migrateCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("migrate")
    .description("bring the database to this bridge's schema, after a backup beside it (<db>.backup-v<N>); stop serve first")
    .option("--json", "machine-readable output")
    .action(async (options: { json?: boolean }) => {
      const [{ withFile }, { upgradeDb }] = await Promise.all([import("./context.ts"), import("../db/upgrade.ts")]);
      const result = await withFile(io, globals(), { keepOlderSchema: true, lock: "migrate" }, async (db, config) => {
        const upgrade = await upgradeDb(db, config.databasePath, (message) => io.err(`bridge: ${message}\n`));
        return { database: config.databasePath, from_version: upgrade.from, to_version: upgrade.to, backup: upgrade.backup ?? null };
      });
      if (options.json) return io.out(json(result));
      if (!result.backup) return io.out(`${result.database} is up to date (schema version ${result.to_version})\n`);
      io.out(`migrated ${result.database} from schema version ${result.from_version} to ${result.to_version}; backup: ${result.backup}\n`);
      // A -wal left beside the restored file would be replayed into it: the backup's pages, overwritten.
      const files = `${result.database}-wal and ${result.database}-shm`;
      io.out(`to roll back: stop bridge, remove ${files}, copy ${result.backup} over ${result.database}, start the older bridge\n`);
    });
}
