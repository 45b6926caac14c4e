import { systemNow, wallClock } from "./clock.ts";
import type { Commit } from "../db/commit.ts";
import type { Db } from "../db/index.ts";
import type { Database } from "../store/database.ts";
import { openStore } from "../store/open.ts";
import { createBalances } from "./operator/balances.ts";
import { createAndroidDriver } from "./clients/android-driver.ts";
import { createCastClient } from "./clients/cast.ts";
import { createGatewayRegistry } from "./clients/registry.ts";
import { createUnsubscribedClient } from "./clients/cast-unsubscribed.ts";
import { createCrmClient } from "./clients/crm.ts";
import type { CallObserver } from "./clients/observe.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import { createMetrics } from "./operator/metrics.ts";
import { createOutages } from "./operator/outages.ts";
import { createScheduler } from "./delivery/scheduler.ts";

import { wireDelivery } from "./delivery/wire.ts";
import { createOptOutList } from "./opt-out-list.ts";
import { wireInstalls } from "./installs/wire.ts";
import { wireAlerts } from "./alerts/wire.ts";
import { watchWrites, type WriteWatch } from "./alerts/write-watch.ts";
import { monthIn } from "../db/usage-month.ts";
import { wireInbound } from "./inbound/wire.ts";
import type { Calls, Context, Core, Stores, Tuning } from "./core-types.ts";
import { castKeyRate } from "./delivery/send-budget.ts";
import { newServerId } from "./servers.ts";

export type { Calls, Clients, Context, Core, Delivery, Inbound, Installs, Operator, Stores, Tuning } from "./core-types.ts";

/**
 * Wires the core room by room from one context: the store, the remote systems' clients,
 * installs (tokens), then delivery, which sends through the clients with the installs'
 * tokens. Each room's own wiring is its `wire.ts`. `source`: a SQLite handle, or the
 * database as src/store/database.ts describes it (PostgreSQL's opened and checked).
 */
export function createCore(config: ResolvedConfig, source: Db | Database, log: Logger, now: () => number = systemNow, tuning: Tuning = {}): Core {
  const database: Database = "kind" in source ? source : { kind: "sqlite", db: source };
  const db = database.kind === "sqlite" ? database.db : noSqlite();
  // On PostgreSQL the id serve opened the store with (its claims carry it); else one of its own.
  const serverId = (database.kind === "postgres" && database.serverId) || newServerId();
  const context: Context = { config, db, database, log, now, tuning, serverId };
  const stores = openStores(context);
  // Metrics count the keys on hold; the holds are wired with delivery, after the clients.
  const calls = createClients(context, stores, () => delivery.holds.list().length);
  const { crm, cast, gateways, castUnsubscribed, outages, metrics } = calls;
  const installs = wireInstalls(context, stores, calls);
  const delivery = wireDelivery(context, stores, calls, installs);
  const inbound = wireInbound(context, stores, calls, installs, delivery);
  const turn = calls.scheduler.tryLowest;
  const balances = createBalances({ sms: cast, keys: stores.gatewayKeys, log, now, lowCredits: config.lowBalanceCredits, turn, owns: delivery.owners.owns });
  const alerts = wireAlerts({ ...stores, outages, config, log, now, alerts: stores.alertStore, backoffMs: tuning.alertBackoffMs, warmUpMs: tuning.alertWarmUpMs });
  const clients = { crm, cast, gateways, castUnsubscribed };
  return { config, db, database, log, now, serverId, ...stores, clients, delivery, installs, inbound, operator: { balances, outages, metrics }, alerts };
}

/** The store (src/store/open.ts), with the opt-out lists as the rooms use them. */
function openStores({ config, database, log, now, tuning }: Context): Stores {
  // The month a message or a reply counts in, in usage: the one place it is chosen.
  const monthOf = monthIn(config.usageTimeZone);
  // Watched: a database that refuses writes is an alert (core/alerts/conditions.ts). On
  // PostgreSQL a refused write is its statement's error: there is no group commit to watch.
  let writes: WriteWatch = watchWrites(async (write) => write(), now);
  const watch = (commit: Commit) => (writes = watchWrites(commit, now)).commit;
  const store = database.kind === "postgres" ? database.store : openStore(config, database.db, log, { commitWindowMs: tuning.commitWindowMs, monthOf, watch });
  return { ...store, optOutList: createOptOutList(store.optOuts, now), writes, monthOf };
}

/** Core's `db` on PostgreSQL: there is no SQLite handle, and a use of one says so. */
function noSqlite(): Db {
  return new Proxy({} as Db, {
    get(_, name) {
      // Symbols and `then` are asked by inspection and await, not by a use.
      if (typeof name === "symbol" || name === "then") return undefined;
      throw new Error(`no SQLite database (db.${String(name)}): this bridge runs on PostgreSQL (DATABASE_URL)`);
    },
  });
}

/** HighLevel's client and the gateway drivers, whose every call the outages and metrics observe. */
function createClients({ config, log, now, tuning }: Context, { jobs, optOuts, replies, phones }: Stores, heldKeys: () => number): Calls {
  const outages = createOutages({ log, now: wallClock });
  const metrics = createMetrics({ jobs, heldKeys, optOuts, replies, now, processMetrics: config.metricsToken !== "" });
  const observe: CallObserver = (call) => {
    outages.observe(call);
    metrics.call(call);
  };
  const crm = createCrmClient({
    apiUrl: config.crm.apiUrl,
    clientId: config.crm.clientId,
    clientSecret: config.crm.clientSecret,
    redirectUri: `${config.baseUrl}/oauth-callback`,
    appId: config.crm.appId,
    observe,
    ...tuning.crm,
  });
  // Wall-clock time (real requests a second), a little under Cast's limits: its buckets
  // count arrivals, which network jitter bunches together, and every 429 costs a second
  // of Retry-After.
  const scheduler = createScheduler({
    requestsPerSecond: config.sms.requestsPerSecond * 0.97,
    // Cast's documented burst is 50 at 30/s; scaled with the rate when it is set otherwise.
    requestBurst: Math.max(1, Math.round((config.sms.requestsPerSecond * 5) / 3) - 2),
    messagesPerSecond: castKeyRate(config.sms.messagesPerSecond).perSecond,
    messageBurst: castKeyRate(config.sms.messagesPerSecond).burst,
    ownBudget: (key) => gateways.driverOf(key).budget,
    limitedMs: tuning.phoneLimitedMs,
  });
  const cast = createCastClient({
    apiUrl: config.sms.apiUrl,
    observe,
    onBalance: metrics.balance,
    // Cast's per-address limit answers the same 429 as a key's: every send and poll waits.
    onRateLimited: (ms) => scheduler.slowDown(undefined, ms),
    localAddress: config.sms.localAddress || undefined,
    ...tuning.sms,
  });
  const android = createAndroidDriver({ ...config.android, phones, dlrWaitMs: config.sms.dlrWaitMs, timeoutMs: tuning.sms?.timeoutMs, observe });
  // Each gateway driver by kind: a key goes to the driver it names, any other to Cast.
  const gateways = createGatewayRegistry(cast, [android]);
  const castUnsubscribed = createUnsubscribedClient({
    apiUrl: config.sms.apiUrl,
    observe,
    onRateLimited: (ms) => scheduler.slowDown(undefined, ms),
    localAddress: config.sms.localAddress || undefined,
  });
  return { crm, cast, gateways, castUnsubscribed, scheduler, outages, metrics };
}
