import type { Sealer } from "../../db/sealer.ts";
import { DEFAULT_USAGE_ZONE, monthIn, type MonthOf } from "../../db/usage-month.ts";
import type { Store } from "../contract.ts";
import { pgAlerts } from "./alerts.ts";
import { pgCompanies } from "./companies.ts";
import { pgGatewayKeys } from "./gateway-keys.ts";
import { pgInbound } from "./inbound.ts";
import { pgMessages } from "./messages.ts";
import { pgJobs, pgPhoneJobs } from "./jobs.ts";
import { pgKeyBudgets } from "./key-budgets.ts";
import { pgOptOuts, pgOutages } from "./optouts.ts";
import { pgPhones } from "./phones.ts";
import { pgAppSessions, pgLeases, pgServers } from "./servers.ts";
import type { Pool } from "./pool.ts";
import { pgLocations } from "./tokens.ts";
import { pgUnsubscribed } from "./unsubscribed.ts";
import { pgUsage } from "./usage.ts";

export interface PostgresStoreOptions {
  /** The month a message counts in, in usage (USAGE_TIME_ZONE's); Asia/Manila's when not given. */
  monthOf?: MonthOf;
  /** The server whose claims the job store names (run_by): serve's; none for the other commands. */
  serverId?: string;
}

/**
 * The store contract (contract.ts) on PostgreSQL, over a pool (pool.ts) whose schema
 * migratePostgres made: each method one statement, or one transaction where it writes
 * more than one (an alert with its condition). Sealed columns go through the same Sealer as on SQLite, bound to their
 * table, column and row, so a value moves between the stores only by `rekey`.
 */
export function openPostgresStore(pool: Pool, sealer: Sealer, options: PostgresStoreOptions = {}): Store {
  const monthOf = options.monthOf ?? monthIn(DEFAULT_USAGE_ZONE);
  return {
    tokens: pgLocations(pool, sealer),
    companies: pgCompanies(pool, sealer),
    optOuts: pgOptOuts(pool),
    outageRecords: pgOutages(pool),
    gatewayKeys: pgGatewayKeys(pool, sealer),
    phones: pgPhones(pool, sealer),
    usage: pgUsage(pool),
    alertStore: pgAlerts(pool),
    replies: pgInbound(pool, monthOf),
    messages: pgMessages(pool),
    jobs: pgJobs(pool, sealer, monthOf, options.serverId ?? null),
    phoneJobs: pgPhoneJobs(pool),
    keyBudgets: pgKeyBudgets(pool),
    servers: pgServers(pool),
    leases: pgLeases(pool),
    appSessions: pgAppSessions(pool),
    unsubscribed: pgUnsubscribed(pool),
  };
}
