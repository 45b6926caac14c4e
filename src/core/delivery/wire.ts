import { wallClock } from "../clock.ts";
import type { Calls, Context, Delivery, Installs, Stores } from "../core-types.ts";
import { maskSecret } from "../mask.ts";
import { createKeyHolds } from "./holds.ts";
import { createSharedHolds } from "./holds-shared.ts";
import { keyTag } from "../key-tag.ts";
import { processOutbound, type OutboundDeps } from "./outbound.ts";
import { createReceiptBook } from "./receipts.ts";
import { createUnsubscribedLists, type UnsubscribedLists } from "./unsubscribed.ts";
import { createPhoneFor } from "./phones.ts";
import { createDoorbell } from "./doorbell.ts";
import { createReadReceiptRecorder, createReceiptSettler } from "./receipt-settle.ts";
import { createKeyOwners, type KeyOwners } from "./key-owners.ts";
import { createIntake } from "./intake.ts";
import { castKeyRate, createSendBudget } from "./send-budget.ts";

/**
 * A message's way in (the intake of HighLevel's webhook, which hands INSTALL and UNINSTALL
 * to installs) and out: send (through the holds and the scheduler), receipt, report.
 */
export function wireDelivery(context: Context, stores: Stores, clients: Calls, installs: Installs): Delivery {
  const { config, log, now, tuning } = context;
  const { tokens, jobs, gatewayKeys, phones, optOutList } = stores;
  const { crm, scheduler, metrics, outages } = clients;
  // Cast, and each location's phone by its key: everything below sends and asks through it.
  const sms = clients.gateways;
  const doorbell = createDoorbell();
  const owners = createKeyOwners({ leases: stores.leases, holder: context.serverId, log });
  const unsubscribed = unsubscribedLists(context, stores, clients);
  const { holds, receipts } = watchers(context, stores, clients, owners, doorbell.ring);
  const sendBudget = sendBudgetOf(context, stores, clients, owners);
  const deps: OutboundDeps = {
    tokens,
    jobs,
    tokenService: installs.tokenService,
    sms,
    scheduler,
    sendBudget,
    holds,
    receiptBook: receipts,
    sentKeys: gatewayKeys,
    crm,
    defaults: { apiKey: config.sms.apiKey, senderId: config.sms.senderId, allowedCompanyIds: config.allowedCompanyIds },
    now,
    log,
    reportBackoffMs: tuning.reportBackoffMs,
    reportAttempts: tuning.reportAttempts,
    takeReports: context.database.kind === "postgres",
    storeRetryMs: tuning.resultStoreRetryMs,
    maxParts: config.sms.maxParts,
    holdMaxMs: config.sms.holdMaxMs,
    sendBackoffMs: tuning.sendBackoffMs,
    dlrWaitMs: config.sms.dlrWaitMs,
    receiptPollMs: tuning.receiptPollMs,
    receiptGraceMs: tuning.receiptGraceMs,
    optOuts: optOutList,
    unsubscribed,
    metrics,
    outages,
    phoneFor: createPhoneFor(phones),
    receiptWaitMs: (apiKey) => sms.driverOf(apiKey).receipts.waitMs,
    unknownWithoutReceipt: (apiKey) => sms.driverOf(apiKey).receipts.unknownWithoutReceipt,
  };
  const intake = createIntake({
    ...installs,
    jobs,
    log,
    now,
    webhookKeys: config.crm.webhookKeys,
    appId: config.crm.appId,
    notify: doorbell.ring,
  });
  const settleReceipt = createReceiptSettler({ jobs, log, now, notify: doorbell.ring });
  return { processOutbound: (job, turn) => processOutbound(deps, job, turn), scheduler, receipts, holds, intake, doorbell, settleReceipt, owners };
}

/**
 * The key holds and the receipt book, both over the gateways. A key's log is read by its
 * owner only (key-owners.ts), for every message of the key the database says waits; what
 * it finds goes into the jobs, so whichever server runs a job next reports it.
 */
function watchers({ log, now, tuning }: Context, { jobs, gatewayKeys }: Stores, { scheduler, gateways: sms, metrics }: Calls, owners: KeyOwners, ring: () => void) {
  const holds = createKeyHolds({
    sms,
    log,
    now: wallClock,
    probeEveryMs: tuning.holdProbeMs,
    record: {
      held: (apiKey, hold) => gatewayKeys.held(keyTag(apiKey), maskSecret(apiKey), hold),
      released: (apiKey) => gatewayKeys.released(keyTag(apiKey)),
    },
    wake: async () => void (await jobs.wakeHeld(now())),
    shared: { holds: createSharedHolds(gatewayKeys, log), tagOf: keyTag },
    owns: (apiKey) => owners.owns(keyTag(apiKey)),
    ownsNow: (apiKey) => owners.ownsNow(keyTag(apiKey)),
  });
  const receipts = createReceiptBook({
    sms,
    scheduler,
    log,
    now,
    freshMs: tuning.receiptBookMs,
    sourceOf: (apiKey) => sms.driverOf(apiKey).receipts.source,
    wake: (jobIds) => jobs.receiptsDue(jobIds, now()),
    owns: (apiKey) => owners.owns(keyTag(apiKey)),
    letGo: (apiKey) => owners.letGo(keyTag(apiKey)),
    awaited: (apiKey, limit) => jobs.awaitingReceipts(keyTag(apiKey), limit),
    record: createReadReceiptRecorder({ jobs, log, now, notify: ring, metrics }),
  });
  return { holds, receipts };
}

/**
 * A send's budgets. Servers sharing the store (PostgreSQL) share each Cast key's budget
 * too; a phone's is kept by the one server sending through it (its key's owner); one
 * server keeps all in memory. A phone's hour counts its sends the store holds.
 */
function sendBudgetOf({ config, log }: Context, stores: Stores, { scheduler, gateways }: Calls, owners: KeyOwners) {
  return createSendBudget({
    scheduler,
    keyBudgets: stores.keyBudgets,
    rate: castKeyRate(config.sms.messagesPerSecond),
    ownBudget: (key) => gateways.driverOf(key).budget !== undefined,
    log,
    now: wallClock,
    owns: (apiKey) => owners.owns(keyTag(apiKey)),
    ownsNow: (apiKey) => owners.ownsNow(keyTag(apiKey)),
    sentSince: (apiKey, since) => stores.phoneJobs.sentSince(keyTag(apiKey), since),
  });
}

/** A read of a key's unsubscribed list is claimed for this long at most: a server that stops mid-read is replaced. */
const UNSUBSCRIBED_READ_MS = 30_000;
const unsubscribedLease = (apiKey: string): string => `unsubscribed:${keyTag(apiKey)}`;

/**
 * Cast's unsubscribed lists, read by one server at a time and stored for every server. A key's
 * sends wait for its list's first read: it goes as a receipt poll does (never starved by
 * other keys' sends), not at the lowest priority as a balance read.
 */
function unsubscribedLists({ log, serverId }: Context, stores: Stores, { scheduler, castUnsubscribed }: Calls): UnsubscribedLists {
  return createUnsubscribedLists({
    read: castUnsubscribed,
    tryRead: () => scheduler.tryPoll(),
    log,
    now: wallClock,
    shared: {
      store: stores.unsubscribed,
      tagOf: keyTag,
      claim: async (apiKey) => (await stores.leases.take(unsubscribedLease(apiKey), serverId, UNSUBSCRIBED_READ_MS).catch(() => undefined)) !== undefined,
      release: (apiKey) => stores.leases.drop(unsubscribedLease(apiKey), serverId),
    },
  });
}
