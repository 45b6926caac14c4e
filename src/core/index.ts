import { createGroupCommit, type Commit } from "../db/commit.ts";
import { createCompanyStore, type CompanyStore } from "../db/companies.ts";
import type { Db } from "../db/index.ts";
import { createJobStore, type Job, type JobStore } from "../db/jobs.ts";
import { createGatewayKeys, type GatewayKeys } from "../db/gateway-keys.ts";
import { createMessageLog, type MessageLog } from "../db/messages.ts";
import { createOptOutStore, type OptOutStore } from "../db/optouts.ts";
import { createOutageRecords, type OutageRecords } from "../db/outages.ts";
import { createBalances, type Balances } from "./operator/balances.ts";
import { checkSealed } from "../db/key-check.ts";
import { resealV1 } from "../db/reseal.ts";
import { createLocationRegistry, type LocationRegistry } from "../db/tokens.ts";
import { createPhoneStore, type PhoneStore } from "../db/phones.ts";
import { createCastClient, type GatewayOptions } from "./clients/cast.ts";
import { createUnsubscribedClient, type ReadUnsubscribed } from "./clients/cast-unsubscribed.ts";
import type { SmsGateway } from "./clients/gateway.ts";
import { createCrmClient, type CrmClient, type CrmOptions } from "./clients/crm.ts";
import type { CallObserver } from "./clients/observe.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import { createMetrics, type Metrics } from "./operator/metrics.ts";
import { createOutages, type Outages } from "./operator/outages.ts";
import { createScheduler, type Scheduler } from "./delivery/scheduler.ts";
import { createSealer, MEND_SEALED } from "../db/sealer.ts";

import type { Exchanges } from "./installs/exchanges.ts";
import type { InstallResult } from "./installs/install.ts";
import type { LaterInstaller } from "./installs/install-later.ts";
import type { KeyHolds } from "./delivery/holds.ts";
import type { ReceiptBook } from "./delivery/receipts.ts";
import type { Pacer } from "./installs/pace.ts";
import type { Sync } from "./installs/sync.ts";
import type { CompanyTokens, TokenService } from "./installs/tokens.ts";
import type { Uninstaller } from "./installs/uninstall.ts";
import type { CompanyUninstaller } from "./installs/uninstall-company.ts";
import { wireDelivery } from "./delivery/wire.ts";
import { createOptOutList } from "./inbound/opt-out-list.ts";
import type { OptOutList } from "./inbound/reply.ts";
import { deviceOf } from "./delivery/phones.ts";
import { wireInstalls } from "./installs/wire.ts";
import { createInboundStore, type InboundStore } from "../db/inbound.ts";
import type { InboundQueue } from "./inbound/queue.ts";
import type { InboundSink } from "./inbound/reply.ts";
import { wireInbound } from "./inbound/wire.ts";

/**
 * Everything the server and the CLI share, built once from config and a database.
 * Grouped by room: a webhook's message goes from `jobs` (intake) through
 * `processOutbound` (delivery) to `sms` (the gateway client).
 */
export interface Core {
  // The context every room is wired from.
  config: ResolvedConfig;
  db: Db;
  log: Logger;
  now: () => number;

  // The store.
  tokens: LocationRegistry;
  /** Agencies' own tokens, kept to follow the locations they add later. */
  companies: CompanyStore;
  jobs: JobStore;
  /** The message log: what the operator lists, shows and retries. */
  messages: MessageLog;
  /** Group commit for the job table's writes: the webhooks' and the queue worker's. */
  commit: Commit;
  /** What the operator's view knows of each gateway key: holds and balances. */
  gatewayKeys: GatewayKeys;
  /** The locations' opt-out lists, as stored (the operator's view reads them). */
  optOuts: OptOutStore;
  /** The same lists as the inbound room and delivery use them: any form of a number is one number. */
  optOutList: OptOutList;
  /** Each location's gateway: Cast, or a phone running SMS Gateway for Android. */
  phones: PhoneStore;

  // The clients of the remote systems.
  crm: CrmClient;
  sms: SmsGateway;
  /** Cast's unsubscribed list of a key's account. */
  castUnsubscribed: ReadUnsubscribed;

  // Delivery: a queued message's send, receipt and report.
  /** processOutbound with its dependencies bound: ms to wait for the gateway's budget, or nothing. */
  processOutbound: (job: Job) => Promise<number | void>;
  /** Cast's rate limits and the locations' turns. */
  scheduler: Scheduler;
  /** Reads each key's log for the receipts its messages wait for; `stop` it with the worker. */
  receipts: ReceiptBook;
  /** API keys Cast refused, waiting for a probe to succeed. */
  holds: KeyHolds;

  // Installs: locations' tokens, installs, uninstalls and reconciliation.
  tokenService: TokenService;
  companyTokens: CompanyTokens;
  /** Spaces the CRM calls of installs and reconciliation (HighLevel: 100 requests per 10 s). */
  pace: Pacer;
  /** OAuth code exchanges in progress. */
  exchanges: Exchanges;
  /** Completes an install from an OAuth code (the callback). */
  install: (code: string) => Promise<InstallResult>;
  /** An INSTALL webhook: the location's token through a stored company token. */
  installLocation: LaterInstaller;
  /** An UNINSTALL event for a location, applied once HighLevel confirms it. */
  uninstall: Uninstaller;
  /** An agency-level UNINSTALL, applied once HighLevel confirms it. */
  uninstallCompany: CompanyUninstaller;
  /** Reconciliation: each stored company's installed locations against the store. */
  sync: Sync;

  // Inbound: replies into HighLevel.
  /** Where sources (the phone's webhook, POST /api/inbound) hand replies over. */
  inbound: InboundSink;
  /** The replies as stored: the queue's, the operator's view's. */
  replies: InboundStore;
  /** Delivers committed replies to HighLevel; started and stopped with the worker. */
  inboundQueue: InboundQueue;

  // Operator: what the operator's view and /metrics read.
  /** Each gateway key's balance, read every few minutes by serve; warns when low. */
  balances: Balances;
  /** HighLevel or Cast unreachable now, as the clients' calls found it. */
  outages: Outages;
  /** The outages serve recorded, for `bridge status` in another process. */
  outageRecords: OutageRecords;
  /** Prometheus metrics of this core (GET /metrics). */
  metrics: Metrics;
}

/** Knobs tests turn to make waits short; production uses the defaults. */
export interface Tuning {
  crm?: Partial<Pick<CrmOptions, "timeoutMs" | "retryDelayMs">>;
  sms?: Partial<Pick<GatewayOptions, "timeoutMs" | "retries" | "retryDelayMs">>;
  reportBackoffMs?: number;
  reportAttempts?: number;
  /** First wait before a send without a clear answer is tried again. */
  sendBackoffMs?: number;
  /** First look for a delivery receipt after a send. */
  receiptPollMs?: number;
  /** How long past DLR_WAIT a status call that gets no answer is tried again. */
  receiptGraceMs?: number;
  /** How often a key Cast refused is probed. */
  holdProbeMs?: number;
  /** How long a key's log of statuses is used before it is read again. */
  receiptBookMs?: number;
  bulkPaceMs?: number;
  /** How long an INSTALL webhook waits for a code exchange in progress. */
  installWaitMs?: number;
  /** How long a write waits for others to share its commit. */
  commitWindowMs?: number;
  /** First wait before storing a refreshed token pair again. */
  tokenStoreRetryMs?: number;
  /** First wait before storing a send's result again. */
  resultStoreRetryMs?: number;
  /** First wait of a phone that hit its send limit (the scheduler's; doubles). */
  phoneLimitedMs?: number;
}

/** The small context each room is wired from. */
export interface Context {
  config: ResolvedConfig;
  db: Db;
  log: Logger;
  now: () => number;
  tuning: Tuning;
}

export type Stores = Pick<Core, "tokens" | "companies" | "jobs" | "messages" | "commit" | "gatewayKeys" | "optOuts" | "optOutList" | "replies" | "phones" | "outageRecords">;
export type Clients = Pick<Core, "crm" | "sms" | "castUnsubscribed" | "scheduler" | "outages" | "metrics">;

/**
 * Wires the core room by room from one context: the store, the remote systems' clients,
 * installs (tokens), then delivery, which sends through the clients with the installs'
 * tokens. Each room's own wiring is its `wire.ts`.
 */
export function createCore(config: ResolvedConfig, db: Db, log: Logger, now: () => number = Date.now, tuning: Tuning = {}): Core {
  const context: Context = { config, db, log, now, tuning };
  const stores = openStores(context);
  // Metrics count the keys on hold; the holds are wired with delivery, after the clients.
  const clients = createClients(context, stores, () => delivery.holds.list().length);
  const installs = wireInstalls(context, stores, clients);
  const delivery = wireDelivery(context, stores, clients, installs);
  const inbound = wireInbound(context, stores, clients, installs);
  const { sms } = clients;
  const turn = clients.scheduler.tryLowest;
  const balances = createBalances({ sms, keys: stores.gatewayKeys, log, now, lowCredits: config.lowBalanceCredits, turn });
  return { config, db, log, now, ...stores, ...clients, ...delivery, ...installs, ...inbound, balances };
}

/** The store, with the secrets it cannot open warned about and old seals renewed. */
function openStores({ config, db, log, now, tuning }: Context): Stores {
  const sealer = createSealer(config.encryptionKey);
  for (const unopenable of checkSealed(db, sealer)) {
    log.warn(`${unopenable}: not used, and what needs it waits (the others work); ${MEND_SEALED}`);
  }
  const tokens = createLocationRegistry(db, sealer);
  const companies = createCompanyStore(db, sealer);
  const resealed = config.encryptionKey ? resealV1(db, sealer) : 0;
  if (resealed > 0) log.info(`secrets of ${resealed} location(s) sealed again, now bound to their row and column`);
  const jobs = createJobStore(db);
  const commit = createGroupCommit(db, tuning.commitWindowMs);
  const messages = createMessageLog(db);
  const gatewayKeys = createGatewayKeys(db, sealer);
  const optOuts = createOptOutStore(db);
  const replies = createInboundStore(db);
  const phones = createPhoneStore(db, sealer);
  const outageRecords = createOutageRecords(db);
  return { tokens, companies, jobs, messages, commit, gatewayKeys, optOuts, optOutList: createOptOutList(optOuts, now), replies, phones, outageRecords };
}

/** HighLevel's and Cast's clients, whose every call the outages and metrics observe. */
function createClients({ config, log, now, tuning }: Context, { jobs, optOuts, replies }: Stores, heldKeys: () => number): Clients {
  const outages = createOutages({ log, now: Date.now });
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
    messagesPerSecond: config.sms.messagesPerSecond * 0.97,
    messageBurst: Math.max(1, Math.ceil(config.sms.messagesPerSecond) - 1),
    // A phone sends one message at a time, at its own pace: carriers cut off a SIM that bursts.
    ownBudget: (key) => (deviceOf(key) === undefined ? undefined : { perSecond: config.android.messagesPerMinute / 60, burst: 1, perHour: config.android.messagesPerHour }),
    limitedMs: tuning.phoneLimitedMs,
  });
  const sms = createCastClient({
    apiUrl: config.sms.apiUrl,
    observe,
    onBalance: metrics.balance,
    // Cast's per-address limit answers the same 429 as a key's: every send and poll waits.
    onRateLimited: (ms) => scheduler.slowDown(undefined, ms),
    ...tuning.sms,
  });
  const castUnsubscribed = createUnsubscribedClient({ apiUrl: config.sms.apiUrl, observe, onRateLimited: (ms) => scheduler.slowDown(undefined, ms) });
  return { crm, sms, castUnsubscribed, scheduler, outages, metrics };
}
