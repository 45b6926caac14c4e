import { createSealer } from "../../../db/sealer.ts";
import { errorMessage } from "../../../errors.ts";
import type { Database } from "../../../store/database.ts";
import { postgresDatabase } from "../../../store/postgres/configured.ts";
import { checkSealedPostgres, connect, postgresSchemaVersion, schemaProblem } from "../../../store/postgres/open.ts";
import { createPool, type Pool } from "../../../store/postgres/pool.ts";
import type { ResolvedConfig } from "../../config.ts";
import { maskDatabaseUrl, withoutPassword } from "../../../store/postgres/url.ts";
import { fail, ok, warn, type Check } from "./check.ts";

/**
 * The database on DATABASE_URL: reached within the connect timeout, at this bridge's
 * schema, its sealed values opened by the key. Returns it open when the rest of doctor
 * can read it, else ends its pool. Every line names the URL with its password masked.
 */
export async function checkPostgres(config: Pick<ResolvedConfig, "databaseUrl" | "encryptionKey">, checks: Check[]): Promise<Database | undefined> {
  const url = config.databaseUrl;
  const pool = createPool(url);
  pool.on("error", () => {}); // an idle connection dropped: the next statement says so
  try {
    if (await findings(pool, config, checks)) return postgresDatabase(pool, createSealer(config.encryptionKey));
  } catch (error) {
    checks.push(fail("database", `PostgreSQL at ${maskDatabaseUrl(url)}: ${withoutPassword(errorMessage(error), url)}`));
  }
  await pool.end();
  return undefined;
}

async function findings(pool: Pool, config: Pick<ResolvedConfig, "databaseUrl" | "encryptionKey">, checks: Check[]): Promise<boolean> {
  const url = config.databaseUrl;
  try {
    await connect(pool, url);
  } catch (error) {
    checks.push(fail("database", `${withoutPassword(errorMessage(error), url)}; check DATABASE_URL, and that the server takes connections from here`));
    return false;
  }
  checks.push(ok("database", `PostgreSQL at ${maskDatabaseUrl(url)} connected`));
  const version = await postgresSchemaVersion(pool);
  const problem = schemaProblem(version);
  if (problem) {
    checks.push(fail("database schema", problem));
    return false;
  }
  checks.push(ok("database schema", `version ${version}, this bridge's`));
  try {
    const unopenable = await checkSealedPostgres(pool, createSealer(config.encryptionKey));
    checks.push(ok("encryption key", "fits the sealed values the database holds"));
    for (const why of unopenable) checks.push(warn("encryption key", why));
  } catch (error) {
    checks.push(fail("encryption key", `${errorMessage(error)}; tokens and keys cannot be checked`));
    return false;
  }
  return true;
}
