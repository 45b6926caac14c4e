import type { KeyOwners } from "./delivery/key-owners.ts";
import type { Store } from "../store/contract.ts";
import type { Database } from "../store/database.ts";
import type { SettleReceipt } from "./pushed-receipt.ts";
import type { Db } from "../db/index.ts";
import type { Job } from "../store/types.ts";
import type { Balances } from "./operator/balances.ts";
import type { MonthOf } from "../db/usage-month.ts";
import type { GatewayOptions } from "./clients/cast.ts";
import type { ReadUnsubscribed } from "./clients/cast-unsubscribed.ts";
import type { GatewayDriver, Gateways } from "./clients/gateway.ts";
import type { CrmClient, CrmOptions } from "./clients/crm.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./operator/metrics.ts";
import type { Outages } from "./operator/outages.ts";
import type { Scheduler } from "./delivery/scheduler.ts";
import type { Turn } from "./delivery/send-order.ts";
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
import type { OptOutList } from "./opt-out-list.ts";
import type { Alerts } from "./alerts/wire.ts";
import type { WriteWatch } from "./alerts/write-watch.ts";
import type { InboundQueue } from "./inbound/queue.ts";
import type { InboundSink } from "./inbound/reply.ts";
import type { createPhoneWebhook } from "./inbound/phone-webhook.ts";
import type { Intake } from "./delivery/intake.ts";
import type { Doorbell } from "./delivery/doorbell.ts";

/**
 * Everything the server and the CLI share, built once from config and a database: the
 * context, the store, and one object per room, each built by its room's `wire.ts`. A
 * webhook's message goes from `delivery.intake` into `jobs`, through
 * `delivery.processOutbound` to `clients.gateways` (the gateway drivers).
 */
export interface Core extends Store {
  // The context every room is wired from.
  config: ResolvedConfig;
  /** SQLite's handle; on PostgreSQL a stand-in that refuses every use (`database` says which). */
  db: Db;
  /** The database the store is on: SQLite's handle or PostgreSQL's pool. */
  database: Database;
  log: Logger;
  now: () => number;
  /** This server's id among the others on the database (servers.ts): its claims' and leases' holder. */
  serverId: string;

  // The store (src/store/contract.ts): tokens, companies, jobs, messages, gatewayKeys,
  // optOuts, replies, phones, phoneJobs, outageRecords; and over it:
  /** The opt-out lists as the inbound room and delivery use them: any form of a number is one number. */
  optOutList: OptOutList;
  /** Whether the database refuses writes now (the group commit's failures). */
  writes: WriteWatch;
  /** The month (`YYYY-MM`, in USAGE_TIME_ZONE) a time counts in, in usage. */
  monthOf: MonthOf;

  clients: Clients;
  delivery: Delivery;
  installs: Installs;
  inbound: Inbound;
  operator: Operator;
  /** Alerts to a person (ALERT_WEBHOOK_URL): serve starts them with its running parts. */
  alerts: Alerts;
}

/** The clients of the remote systems (src/core/clients/). */
export interface Clients {
  crm: CrmClient;
  /** Cast's driver itself (balance, sender IDs); sending goes through `gateways`. */
  cast: GatewayDriver;
  /** Every gateway driver by kind (Cast's, the phones'), and one SmsGateway routing each call to the driver of its key. */
  gateways: Gateways;
  /** Cast's unsubscribed list of a key's account. */
  castUnsubscribed: ReadUnsubscribed;
}

/** Delivery (src/core/delivery/wire.ts): a message's intake, send, receipt and report. */
export interface Delivery {
  /** HighLevel's webhook (POST /webhooks/crm): verified, committed as a job, or handed to installs. */
  intake: Intake;
  /** processOutbound with its dependencies bound: ms to wait for the gateway's budget, or nothing. */
  processOutbound: (job: Job, turn?: Turn) => Promise<number | void>;
  /** The gateways' rate limits and the locations' turns. */
  scheduler: Scheduler;
  /** Reads each key's log for the receipts its messages wait for; `stop` it with the worker. */
  receipts: ReceiptBook;
  /** API keys a gateway refused, waiting for a probe to succeed. */
  holds: KeyHolds;
  /** Rung when work for the queue worker is committed; the worker listens (src/core/run.ts). */
  doorbell: Doorbell;
  /** Settles a receipt a gateway pushed (a phone's status event, handed over by inbound's phone webhook). */
  settleReceipt: SettleReceipt;
  /** Which gateway keys' control work (receipt reads, hold probes, balance and unsubscribed reads) this server does now. */
  owners: KeyOwners;
}

/** Installs (src/core/installs/wire.ts): locations' tokens, installs, uninstalls and reconciliation. */
export interface Installs {
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
}

/** Inbound (src/core/inbound/wire.ts): replies into HighLevel. */
export interface Inbound {
  /** Where sources (the phone's webhook, POST /api/inbound) hand replies over. */
  sink: InboundSink;
  /** Delivers committed replies to HighLevel; started and stopped with the worker. */
  queue: InboundQueue;
  /** The phones' webhook (POST /webhooks/android), its received texts to the sink, or to `sink` (tests). */
  phoneWebhook: (sink?: InboundSink) => PhoneWebhook;
}

/** Operator: what the operator's view and /metrics read. */
export interface Operator {
  /** Each gateway key's balance, read every few minutes by serve; warns when low. */
  balances: Balances;
  /** HighLevel or Cast unreachable now, as the clients' calls found it. */
  outages: Outages;
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
  /** First wait after the alert webhook did not take an alert. */
  alertBackoffMs?: number;
  /** How long after start no alerted condition ends. */
  alertWarmUpMs?: number;
}

/** The small context each room is wired from. */
export interface Context {
  config: ResolvedConfig;
  db: Db;
  database: Database;
  log: Logger;
  now: () => number;
  tuning: Tuning;
  /** This server's id among the others on the database (servers.ts): its claims' and leases' holder. */
  serverId: string;
}

export type Stores = Store & Pick<Core, "optOutList" | "writes" | "monthOf">;
/** The clients, with what paces and watches their calls: what the rooms are wired with. */
export type Calls = Clients & Pick<Delivery, "scheduler"> & Pick<Operator, "outages" | "metrics">;

/** The phones' webhook: a posted body, its signature and timestamp headers, to the answer. */
export type PhoneWebhook = ReturnType<typeof createPhoneWebhook>;
