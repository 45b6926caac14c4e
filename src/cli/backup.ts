import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { GlobalOptions } from "./context.ts";
import { json, type Io } from "./io.ts";

/** On PostgreSQL the database's own tools back it up, consistently while servers run. */
async function refuse(): Promise<never> {
  throw new Error("DATABASE_URL is set: bridge backup copies a SQLite file; back PostgreSQL up with pg_dump (e.g. pg_dump -Fc -f bridge.dump \"$DATABASE_URL\")");
}

/** `bridge backup FILE [--force] [--json]`: a consistent copy of the live database, mode 0600. */
export function backupCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("backup <file>")
    .description("copy the SQLite database (safe while serve runs: SQLite's online backup) to FILE, mode 0600; on PostgreSQL use pg_dump")
    .option("--force", "overwrite FILE if it exists")
    .option("--json", "machine-readable output")
    .action(async (file: string, options: { force?: boolean; json?: boolean }) => {
      const [{ withFile }, { writeBackup }, { schemaVersion }] = await Promise.all([
        import("./context.ts"),
        import("../db/backup.ts"),
        import("../db/schema.ts"),
      ]);
      const result = await withFile(io, globals(), { keepOlderSchema: true, postgres: refuse }, async (db, config) => {
        if (resolve(file) === resolve(config.databasePath)) throw new Error(`${file} is the database itself; name another file`);
        await writeBackup(db, file, { force: options.force });
        return { database: config.databasePath, backup: file, bytes: statSync(file).size, schema_version: schemaVersion(db) };
      });
      if (options.json) return io.out(json(result));
      io.out(`backed up ${result.database} to ${result.backup} (${result.bytes} bytes, schema version ${result.schema_version}, mode 0600)\n`);
    });
}
