import type { Command } from "commander";
import type { ResolvedConfig } from "../core/config.ts";
import type { GlobalOptions } from "./context.ts";
import { json, type Io } from "./io.ts";

interface Migrated {
  database: string;
  from_version: number;
  to_version: number;
  /** The SQLite file's copy made first; null when none was needed, and on PostgreSQL (pg_dump's job). */
  backup: string | null;
}

/** `bridge migrate [--json] [--force]`: what a new `serve` does first, without starting it. */
export function migrateCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("migrate")
    .description("bring the database to this bridge's schema, after a backup beside it (<db>.backup-v<N>); stop serve first")
    .option("--json", "machine-readable output")
    .option("--force", "PostgreSQL: migrate although a server's heartbeat is fresh (one that is gone for good)")
    .action(async (options: { json?: boolean; force?: boolean }) => {
      const [{ withFile }, { upgradeDb }] = await Promise.all([import("./context.ts"), import("../db/upgrade.ts")]);
      const postgres = (config: ResolvedConfig) => migratePostgres(config, options.force === true);
      const result: Migrated = await withFile(io, globals(), { keepOlderSchema: true, lock: "migrate", postgres }, async (db, config) => {
        const upgrade = await upgradeDb(db, config.databasePath, (message) => io.err(`bridge: ${message}\n`));
        return { database: config.databasePath, from_version: upgrade.from, to_version: upgrade.to, backup: upgrade.backup ?? null };
      });
      if (options.json) return io.out(json(result));
      if (result.from_version === result.to_version) return io.out(`${result.database} is up to date (schema version ${result.to_version})\n`);
      if (!result.backup) return io.out(`migrated ${result.database} from schema version ${result.from_version} to ${result.to_version}\n`);
      io.out(`migrated ${result.database} from schema version ${result.from_version} to ${result.to_version}; backup: ${result.backup}\n`);
      // A -wal left beside the restored file would be replayed into it: the backup's pages, overwritten.
      const files = `${result.database}-wal and ${result.database}-shm`;
      io.out(`to roll back: stop bridge, remove ${files}, copy ${result.backup} over ${result.database}, start the older bridge\n`);
    });
}

/**
 * On PostgreSQL: the schema brought up to date under the schema lock serve takes too,
 * refused while another server's heartbeat is fresh (it would run on a schema it does
 * not know) unless `force`. No backup is made: that is pg_dump's (docs/operations.md).
 */
async function migratePostgres(config: ResolvedConfig, force: boolean): Promise<Migrated> {
  const [{ withPool, postgresSchemaVersion, refuseWhileAlive }, pool, { SCHEMA_VERSION }, { maskDatabaseUrl }] = await Promise.all([
    import("../store/postgres/open.ts"),
    import("../store/postgres/pool.ts"),
    import("../db/schema.ts"),
    import("../store/postgres/url.ts"),
  ]);
  let from = 0;
  await withPool(config.databaseUrl, (db) =>
    pool.migratePostgres(db, async (client) => {
      from = await postgresSchemaVersion(client);
      if (from !== SCHEMA_VERSION) await refuseWhileAlive(client, "bridge migrate", force);
    }),
  );
  return { database: maskDatabaseUrl(config.databaseUrl), from_version: from, to_version: Math.max(from, SCHEMA_VERSION), backup: null };
}
