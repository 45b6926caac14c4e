import type { JobStore } from "../../store/contract.ts";
import type { GatewayKeys } from "../../store/contract.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { Gateways } from "../clients/gateway.ts";
import type { CrmClient } from "../clients/crm.ts";
import type { Logger } from "../log.ts";
import type { KeyHolds } from "./holds.ts";
import type { MessageMetrics } from "../operator/metrics.ts";
import type { Outages } from "../operator/outages.ts";
import type { ReceiptBook } from "./receipts.ts";
import type { Scheduler } from "./scheduler.ts";
import type { SendBudget } from "./send-budget.ts";
import type { OptOutList } from "../opt-out-list.ts";
import type { UnsubscribedLists } from "./unsubscribed.ts";
import type { TokenService } from "../installs/tokens.ts";
import type { SharedSending } from "../installs/locations.ts";

/** What a queued message's way out uses (wired in wire.ts). */
export interface OutboundDeps {
  tokens: LocationRegistry;
  jobs: JobStore;
  tokenService: TokenService;
  /** Every gateway driver, each call routed to the driver of its key (clients/registry.ts). */
  sms: Gateways;
  /** Cast's per-address budget, which receipt reads take too. */
  scheduler: Scheduler;
  /** Cast's rate limits: a send goes only with a token of both budgets (and of the key's shared one, servers sharing the store). */
  sendBudget: SendBudget;
  /** API keys Cast refused (401, 402, 403): their messages wait. */
  holds: KeyHolds;
  /** Delivery receipts read in batches from each key's log. */
  receiptBook: ReceiptBook;
  /** The key each send went with, kept by its tag: its receipt is asked with it even after the key was changed. */
  sentKeys: Pick<GatewayKeys, "keep" | "sentWith">;
  crm: CrmClient;
  /** The operator's key and sender ID, and who may use them: checked at every send. */
  defaults: SharedSending;
  now: () => number;
  log: Logger;
  /** First delay before re-trying a status report (RETRY.report). */
  reportBackoffMs?: number;
  /** Status reports tried at most this often before the job is given up (RETRY.report). */
  reportAttempts?: number;
  /** Servers sharing the database (PostgreSQL): a report is taken (jobs.takeReport) before it goes, so one of them makes it. */
  takeReports?: boolean;
  /** First wait before storing a send's result again. */
  storeRetryMs?: number;
  /** A message of more parts is refused (SMS_MAX_PARTS). */
  maxParts: number;
  /** Longest a message waits out a gateway that does not answer clearly (SMS_HOLD_MAX). */
  holdMaxMs: number;
  /** First wait before a send without a clear answer is tried again; doubles up to a minute. */
  sendBackoffMs?: number;
  /** Longest a delivery receipt is awaited before the report (DLR_WAIT); 0: not asked for. */
  dlrWaitMs: number;
  /** First look for a receipt after a send. */
  receiptPollMs?: number;
  /** How long past DLR_WAIT a status call that gets no answer is tried again. */
  receiptGraceMs?: number;
  /** The locations' opt-out lists: a send to a listed number fails before any gateway call. */
  optOuts?: Pick<OptOutList, "has">;
  /** Cast's unsubscribed lists, per API key: a send to a number on it for its sender ID fails too. */
  unsubscribed?: UnsubscribedLists;
  /** Told when a message is done with, and when its receipt came. */
  metrics?: MessageMetrics;
  /** Told of each message that waits for an outage of Cast or HighLevel: the outage's lines speak for it. */
  outages?: Pick<Outages, "waited">;
  /** The key of the phone a location sends through (delivery/phones.ts); undefined: it sends through Cast. */
  phoneFor?: (locationId: string) => Promise<string | undefined>;
  /** How long a send with this key waits for its receipt, when not DLR_WAIT (a phone's). */
  receiptWaitMs?: (apiKey: string) => number | undefined;
  /** Whether a send with this key still without a final receipt at its deadline is delivery unknown (a phone's). */
  unknownWithoutReceipt?: (apiKey: string) => boolean;
}

// Each step of a message's way out takes only what it uses (outbound.ts runs them in turn).

/** Preparing a send: the key, sender and gateway of the message, its limits and opt-outs, the key of its receipt (outbound.ts). */
export type PrepareDeps = Pick<OutboundDeps, "tokens" | "defaults" | "sms" | "sentKeys" | "maxParts" | "optOuts" | "phoneFor" | "now">;
/** Claiming and sending: the claim, the key's holds and the gateway's answer (outbound.ts). */
export type SendDeps = Pick<OutboundDeps, "jobs" | "sms" | "holds" | "log" | "now" | "sendBudget"> & FailureDeps;
/** What becomes of a failed send: retry, hold or fail (send-failure.ts). */
export type FailureDeps = Pick<OutboundDeps, "sms" | "holds" | "sendBudget" | "log" | "now" | "outages" | "holdMaxMs" | "sendBackoffMs">;
/** Storing a send's result until the store takes it (store-result.ts). */
export type StoreDeps = Pick<OutboundDeps, "jobs" | "log" | "now" | "storeRetryMs">;
/** Reporting a message's outcome to HighLevel (report.ts). */
export type ReportDeps = Pick<OutboundDeps, "jobs" | "crm" | "tokenService" | "log" | "now" | "metrics" | "outages" | "reportAttempts" | "reportBackoffMs" | "takeReports">;
