import type { Sealer } from "../../db/sealer.ts";
import type { Store } from "../contract.ts";
import { pgAlerts } from "./alerts.ts";
import { pgCompanies } from "./companies.ts";
import { pgGatewayKeys } from "./gateway-keys.ts";
import { pgOptOuts, pgOutages } from "./optouts.ts";
import { pgPhones } from "./phones.ts";
import { pgAppSessions, pgLeases, pgServers } from "./servers.ts";
import type { Pool } from "./pool.ts";
import { pgLocations } from "./tokens.ts";
import { pgUsage } from "./usage.ts";

/** The stores of the contract implemented on PostgreSQL so far; the others are SQLite's only. */
export const POSTGRES_STORES = ["tokens", "companies", "optOuts", "outageRecords", "gatewayKeys", "phones", "usage", "alertStore", "servers", "leases", "appSessions"] as const;

export type PostgresStore = Pick<Store, (typeof POSTGRES_STORES)[number]>;

/**
 * The store contract (contract.ts) on PostgreSQL, over a pool (pool.ts) whose schema
 * migratePostgres made: each method one statement, or one transaction where it writes
 * more than one (an alert with its condition). Sealed columns go through the same Sealer as on SQLite, bound to their
 * table, column and row, so a value moves between the stores only by `rekey`.
 */
export function openPostgresStore(pool: Pool, sealer: Sealer): PostgresStore {
  return {
    tokens: pgLocations(pool, sealer),
    companies: pgCompanies(pool, sealer),
    optOuts: pgOptOuts(pool),
    outageRecords: pgOutages(pool),
    gatewayKeys: pgGatewayKeys(pool, sealer),
    phones: pgPhones(pool, sealer),
    usage: pgUsage(pool),
    alertStore: pgAlerts(pool),
    servers: pgServers(pool),
    leases: pgLeases(pool),
    appSessions: pgAppSessions(pool),
  };
}
