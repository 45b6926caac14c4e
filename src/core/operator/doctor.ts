import { systemNow } from "../clock.ts";
import type { Db } from "../../db/index.ts";
import type { TokenRecord } from "../../store/types.ts";
import { createCastClient } from "../clients/cast.ts";
import type { ResolvedConfig } from "../config.ts";
import { errorMessage } from "../../errors.ts";
import { createCore, type Core } from "../index.ts";
import { createLogger } from "../log.ts";
import { checkAlerts } from "./doctor/alerts.ts";
import { checkApprovals } from "./doctor/approvals.ts";
import { checkCast } from "./doctor/cast.ts";
import { fail, type Check } from "./doctor/check.ts";
import { checkConfig } from "./doctor/config.ts";
import { checkDatabase, type OpenDb } from "./doctor/database.ts";
import type { Database } from "../../store/database.ts";
import { checkHighLevelReach, checkTokens } from "./doctor/highlevel.ts";
import { checkPhones } from "./phones.ts";

export type { Check } from "./doctor/check.ts";

export interface DoctorReport {
  /** False when any check failed. */
  ok: boolean;
  checks: Check[];
}

export interface DoctorDeps {
  /** The environment as the command sees it (.env file under the real environment). */
  env: Record<string, string | undefined>;
  /** Opens the database; the CLI's own, so the addon is loaded once. */
  openDb: OpenDb;
  /** Each remote gets this long to answer. */
  timeoutMs?: number;
}

/**
 * `bridge doctor`: every check it can make, in order (config, database, HighLevel, Cast),
 * each a line of its own; a check that cannot run for want of an earlier one is left out,
 * the earlier one says why. Never throws for what it finds.
 */
export async function runDoctor(deps: DoctorDeps): Promise<DoctorReport> {
  const timeoutMs = deps.timeoutMs ?? 5_000;
  const checks: Check[] = [];
  const config = checkConfig(deps.env, checks);
  if (!config) return report(checks);
  // pg is loaded only for PostgreSQL: every other doctor starts without it.
  const db = config.databaseUrl
    ? await (await import("./doctor/postgres.ts")).checkPostgres(config, checks)
    : sqlite(checkDatabase(config.databasePath, deps.openDb, checks));
  try {
    const core = db && openCore(config, db, timeoutMs, checks);
    const records = core ? await readLocations(core, checks) : [];
    if (core) checks.push(...(await checkApprovals(core.tokens, config.allowedCompanyIds)), await checkAlerts(config, core.alertStore));
    await checkHighLevelReach(config, timeoutMs, checks);
    if (core) await checkTokens(records, core.installs.tokenService, checks);
    const sms = createCastClient({ apiUrl: config.sms.apiUrl, timeoutMs: timeoutMs * 2, retries: 0 });
    // A location on a phone sends with no Cast key: its phone is checked instead.
    const phones = core ? await core.phones.describeAll() : undefined;
    const onCast = records.filter((r) => phones?.get(r.locationId)?.gateway !== "android");
    await checkCast(config, sms, onCast, timeoutMs, checks);
    if (core) checks.push(...(await checkPhones(core.phones, config.baseUrl, timeoutMs).catch((error: unknown) => [fail("phones", errorMessage(error))])));
  } finally {
    if (db?.kind === "sqlite") db.db.close();
    else await db?.pool.end();
  }
  return report(checks);
}

function sqlite(db: Db | undefined): Database | undefined {
  return db && { kind: "sqlite", db };
}

function report(checks: Check[]): DoctorReport {
  return { ok: !checks.some((c) => c.status === "fail"), checks };
}

/** The server's own core, quiet (doctor reports what it finds itself), with short timeouts. */
function openCore(config: ResolvedConfig, db: Database, timeoutMs: number, checks: Check[]): Core | undefined {
  try {
    const tuning = { crm: { timeoutMs: timeoutMs * 2 }, sms: { timeoutMs: timeoutMs * 2, retries: 0 } };
    return createCore(config, db, createLogger("silent"), systemNow, tuning);
  } catch (error) {
    // On PostgreSQL the key was checked already (doctor/postgres.ts): what fails here is the store.
    checks.push(fail(db.kind === "sqlite" ? "encryption key" : "database", `${errorMessage(error)}; tokens and keys cannot be checked`));
    return undefined;
  }
}

async function readLocations(core: Core, checks: Check[]): Promise<TokenRecord[]> {
  const records: TokenRecord[] = [];
  for (const id of await core.tokens.ids()) {
    try {
      const record = await core.tokens.get(id);
      if (record) records.push(record);
    } catch (error) {
      checks.push(fail(`location ${id}`, `${errorMessage(error)}`));
    }
  }
  return records;
}
