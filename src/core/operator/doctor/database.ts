import { existsSync } from "node:fs";
import type { Db, OpenOptions } from "../../../db/index.ts";
import { SCHEMA_VERSION, SchemaBehindError, quickCheck, schemaVersion } from "../../../db/schema.ts";
import { errorMessage } from "../../../errors.ts";
import { fail, ok, warn, type Check } from "./check.ts";

export type OpenDb = (path: string, options: OpenOptions) => Db;

/**
 * The database file: there (a warning when not yet made), bridge's, private, at this bridge's schema, intact. Returns
 * it open when the rest of doctor can read it (its schema is current), else closes it.
 */
export function checkDatabase(path: string, openDb: OpenDb, checks: Check[]): Db | undefined {
  if (!existsSync(path)) {
    // A new installation has no database until its first `serve`: nothing is wrong yet.
    // A typo in DATABASE_PATH looks the same, so the warning names the path it looked at.
    checks.push(
      warn("database", `no database yet at ${path}: \`bridge serve\` creates it when it first starts; set DATABASE_PATH or --db if it is elsewhere`),
    );
    return undefined;
  }
  const fixed: string[] = [];
  let db: Db;
  try {
    db = openDb(path, { existing: true, keepOlderSchema: true, warn: (message) => fixed.push(message) });
  } catch (error) {
    checks.push(fail("database", errorMessage(error)));
    return undefined;
  }
  checks.push(ok("database", `${path} opened, mode 0600`));
  for (const change of fixed) checks.push(warn("database files", `${change}; whoever could read it may have copied its tokens`));
  const current = checkSchema(db, path, checks);
  checkIntegrity(db, checks);
  if (current) return db;
  db.close();
  return undefined;
}

function checkSchema(db: Db, path: string, checks: Check[]): boolean {
  const version = schemaVersion(db);
  if (version === SCHEMA_VERSION) {
    checks.push(ok("database schema", `version ${version}, this bridge's`));
    return true;
  }
  checks.push(fail("database schema", new SchemaBehindError(path, version).message.replace(`database ${path} is at schema`, "at schema")));
  return false;
}

function checkIntegrity(db: Db, checks: Check[]): void {
  const problems = quickCheck(db, 5);
  if (problems.length === 0) checks.push(ok("database integrity", "quick_check ok"));
  else checks.push(fail("database integrity", `quick_check: ${problems.join("; ")}; restore the last backup (see README, Operating bridge)`));
}
