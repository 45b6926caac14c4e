import { createGroupCommit, type Commit } from "../db/commit.ts";
import { createCompanyStore } from "../db/companies.ts";
import type { Db } from "../db/index.ts";
import { createGatewayKeys } from "../db/gateway-keys.ts";
import { createMessageLog } from "../db/messages.ts";
import { createOptOutStore } from "../db/optouts.ts";
import { createOutageRecords } from "../db/outages.ts";
import { createPhoneJobs } from "../db/phone-jobs.ts";
import { createPhoneStore } from "../db/phones.ts";
import type { Sealer } from "../db/sealer.ts";
import { createLocationRegistry } from "../db/tokens.ts";
import { createAlertStore } from "../db/alerts.ts";
import { createKeyBudgets } from "../db/key-budgets.ts";
import { monthIn, type MonthOf } from "../db/usage-month.ts";
import { createUsageStore } from "../db/usage-store.ts";
import type { KeyBudgets } from "./contract-budgets.ts";
import { createAppSessionStore, createLeaseStore, createServerStore } from "../db/servers.ts";
import { createUnsubscribedStore } from "../db/unsubscribed.ts";
import type { AppSessionStore, LeaseStore, ServerStore, UnsubscribedStore } from "./contract-servers.ts";
import type { AlertStore, UsageStore } from "./contract-usage.ts";
import type { CompanyStore, GatewayKeys, LocationRegistry, MessageLog, OptOutStore, OutageRecords, PhoneJobs, PhoneStore, Store } from "./contract.ts";
import { facade } from "./facade.ts";
import { sqliteInbound } from "./sqlite-inbound.ts";
import { sqliteJobs } from "./sqlite-jobs.ts";

export interface SqliteOptions {
  /** How long a write waits for others to share its commit (docs/PERFORMANCE.md). */
  commitWindowMs?: number;
  /** The month a message or a reply counts in, in usage (USAGE_TIME_ZONE's; Asia/Manila's by default). */
  monthOf?: MonthOf;
  /** Wraps the group commit (the alerts watch it for a database that refuses writes). */
  watch?: (commit: Commit) => Commit;
  /** The clock of servers' heartbeats and leases: the machine's (Date.now) unless a test gives one. */
  clock?: () => number;
}

const TOKEN_WRITES = ["updateTokens", "delete", "tryLease", "releaseLease", "save"] as const;

/**
 * The store contract (contract.ts) over the one SQLite connection: the synchronous stores
 * of src/db/ behind an async facade. Every write goes through one group commit
 * (src/db/commit.ts): the webhooks' new jobs, the worker's state changes and the replies'
 * share a transaction and an fsync (batched); the rare writes (settings, tokens, keys,
 * outages) commit at once, with whatever waits. Reads run at once.
 */
export function openSqliteStore(db: Db, sealer: Sealer, options: SqliteOptions = {}): Store {
  const grouped = createGroupCommit(db, options.commitWindowMs);
  const commit = options.watch ? options.watch(grouped) : grouped;
  const monthOf = options.monthOf ?? monthIn("Asia/Manila");
  const clock = options.clock ?? (() => Date.now());
  return lazily<Store>({
    tokens: () => facade<LocationRegistry>(createLocationRegistry(db, sealer), commit, { alone: [...TOKEN_WRITES, "setName", "setApproved", "markUninstalled", "setConfig"] }),
    companies: () => facade<CompanyStore>(createCompanyStore(db, sealer), commit, { alone: TOKEN_WRITES }),
    jobs: () => sqliteJobs(db, commit, createGatewayKeys(db, sealer), monthOf),
    messages: () => facade<MessageLog>(createMessageLog(db), commit, { alone: ["requeue"] }),
    gatewayKeys: () => facade<GatewayKeys>(createGatewayKeys(db, sealer), commit, { alone: ["keep", "forgetUnused", "held", "released", "clearHolds", "balance"] }),
    optOuts: () => facade<OptOutStore>(createOptOutStore(db), commit, { alone: ["add", "remove"] }),
    replies: () => sqliteInbound(db, commit, createOptOutStore(db), monthOf),
    phones: () => facade<PhoneStore>(createPhoneStore(db, sealer), commit, { alone: ["set"] }),
    phoneJobs: () => facade<PhoneJobs>(createPhoneJobs(db), commit, {}),
    outageRecords: () => facade<OutageRecords>(createOutageRecords(db), commit, { alone: ["save", "end", "clear"] }),
    usage: () => facade<UsageStore>(createUsageStore(db), commit, { alone: ["setCap"] }),
    alertStore: () => facade<AlertStore>(createAlertStore(db), commit, { alone: ["start", "adopt", "repeat", "end", "test", "delivered", "failed", "prune"] }),
    // One server: its sends take the keys' budgets in memory (scheduler.ts), not here.
    keyBudgets: () => ({ shared: false, ...facade<Omit<KeyBudgets, "shared">>(createKeyBudgets(db), commit, { alone: ["take", "giveBack", "pause"] }) }),
    servers: () => facade<ServerStore>(createServerStore(db, clock), commit, { alone: ["beat", "gone"] }),
    leases: () => facade<LeaseStore>(createLeaseStore(db, clock), commit, { alone: ["take", "release", "drop"] }),
    appSessions: () => facade<AppSessionStore>(createAppSessionStore(db), commit, { alone: ["open", "drop", "prune"] }),
    unsubscribed: () => facade<UnsubscribedStore>(createUnsubscribedStore(db, clock), commit, { alone: ["put", "prune"] }),
  });
}

/** Each store built at its first use: a CLI command prepares only the statements it runs. */
function lazily<T extends object>(build: { [K in keyof T]: () => T[K] }): T {
  const store = {} as T;
  for (const name of Object.keys(build) as (keyof T & string)[]) {
    Object.defineProperty(store, name, {
      enumerable: true,
      configurable: true,
      get() {
        const value = build[name]();
        Object.defineProperty(store, name, { value, enumerable: true });
        return value;
      },
    });
  }
  return store;
}
