import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { ResolvedConfig } from "../core/config.ts";
import type { GlobalOptions } from "./context.ts";
import { json, UsageError, type Io } from "./io.ts";

interface RekeyOptions {
  newKey?: string;
  newKeyFile?: string;
  decrypt?: boolean;
  json?: boolean;
}

/**
 * `bridge rekey --new-key - | --new-key-file PATH | --decrypt`: every secret in the
 * database sealed again under a new BRIDGE_ENCRYPTION_KEY (the current one is the
 * environment's, as for every command). The new key never goes on the command line.
 */
export function rekeyCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("rekey")
    .description("re-encrypt every token and API key under a new BRIDGE_ENCRYPTION_KEY (stop serve first)")
    .option("--new-key <source>", '"-": read the new key (64 hex or base64) from standard input, not echoed on a terminal')
    .option("--new-key-file <path>", "read the new key from this file")
    .option("--decrypt", "store every secret plain again (to drop BRIDGE_ENCRYPTION_KEY)")
    .option("--json", "machine-readable output")
    .action(async (options: RekeyOptions) => {
      const next = await newKey(io, options);
      const [{ withFile }, { createSealer }, { rekey }] = await Promise.all([
        import("./context.ts"),
        import("../db/sealer.ts"),
        import("../db/rekey.ts"),
      ]);
      const postgres = (config: ResolvedConfig) => rekeyPostgres(config, next);
      const count = await withFile(io, globals(), { lock: "rekey", postgres }, (db, config) => {
        sameKey(config, next);
        return rekey(db, createSealer(config.encryptionKey), createSealer(next));
      });
      if (options.json) return io.out(json({ secrets: count, encrypted: next !== undefined }));
      if (!next) {
        io.out(`stored ${count} secret(s) plain\n`);
        return io.out("next: remove BRIDGE_ENCRYPTION_KEY from the env file (e.g. /etc/bridge/env), then start bridge serve\n");
      }
      io.out(`re-encrypted ${count} secret(s) under the new key\n`);
      io.out("next: set BRIDGE_ENCRYPTION_KEY to the new key in the env file (e.g. /etc/bridge/env), then start bridge serve; keep the old key as long as you keep backups made before now: they are sealed with it\n");
    });
}

function sameKey(config: ResolvedConfig, next: Buffer | undefined): void {
  if (next && config.encryptionKey?.equals(next)) throw new Error("the new key is the one BRIDGE_ENCRYPTION_KEY already holds: nothing to do");
}

/** On PostgreSQL (src/store/postgres/rekey.ts): at this bridge's schema, refused while a server is alive. */
async function rekeyPostgres(config: ResolvedConfig, next: Buffer | undefined): Promise<number> {
  sameKey(config, next);
  const [{ withPool, postgresSchemaVersion, schemaProblem }, { rekeyPostgres: rekeyOn }, { createSealer }] = await Promise.all([
    import("../store/postgres/open.ts"),
    import("../store/postgres/rekey.ts"),
    import("../db/sealer.ts"),
  ]);
  return withPool(config.databaseUrl, async (pool) => {
    const problem = schemaProblem(await postgresSchemaVersion(pool));
    if (problem) throw new Error(problem);
    return rekeyOn(pool, createSealer(config.encryptionKey), createSealer(next));
  });
}

/** The new key, read where the operator said; undefined for --decrypt. */
async function newKey(io: Io, options: RekeyOptions): Promise<Buffer | undefined> {
  const given = [options.newKey !== undefined, options.newKeyFile !== undefined, options.decrypt === true].filter(Boolean).length;
  if (given !== 1) throw new UsageError("rekey needs exactly one of --new-key -, --new-key-file PATH, --decrypt");
  if (options.decrypt) return undefined;
  if (options.newKey !== undefined && options.newKey !== "-") {
    throw new UsageError("--new-key takes only \"-\" (standard input): a key on the command line is visible to every user in the process list");
  }
  const text = options.newKeyFile !== undefined ? await readKeyFile(options.newKeyFile) : await readStdin(io);
  const { parseEncryptionKey } = await import("../db/sealer.ts");
  const key = parseEncryptionKey(text.trim());
  if (!key) throw new UsageError("the new key must be 32 bytes, as 64 hex characters or base64 (make one with `openssl rand -hex 32`)");
  return key;
}

async function readStdin(io: Io): Promise<string> {
  if (!io.readLine) throw new UsageError("--new-key -: there is no standard input to read the key from");
  const line = await io.readLine("new BRIDGE_ENCRYPTION_KEY (not shown): ");
  if (line.trim() === "") throw new UsageError("--new-key -: no key on standard input");
  return line;
}

async function readKeyFile(path: string): Promise<string> {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`cannot read the new key from ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { cause: error });
  }
}
