import type { Clients, Context, Core, Stores } from "../index.ts";
import type { Installs } from "../installs/wire.ts";
import { maskSecret } from "../mask.ts";
import { createKeyHolds } from "./holds.ts";
import { keyTag } from "./key-tag.ts";
import { processOutbound, type OutboundDeps } from "./outbound.ts";
import { createReceiptBook } from "./receipts.ts";
import { createUnsubscribedLists } from "./opt-out.ts";

/** What the delivery room gives the core. */
export type Delivery = Pick<Core, "processOutbound" | "receipts" | "holds">;

/** A queued message's way out: send (through the holds and the scheduler), receipt, report. */
export function wireDelivery({ config, log, now, tuning }: Context, stores: Stores, clients: Clients, installs: Installs): Delivery {
  const { tokens, jobs, commit, gatewayKeys, optOutList } = stores;
  const { sms, crm, scheduler, metrics, outages, castUnsubscribed } = clients;
  const holds = createKeyHolds({
    sms,
    log,
    now: Date.now,
    probeEveryMs: tuning.holdProbeMs,
    record: {
      held: (apiKey, hold) => gatewayKeys.held(keyTag(apiKey), maskSecret(apiKey), hold),
      released: (apiKey) => gatewayKeys.released(keyTag(apiKey)),
    },
    wake: () => jobs.wakeHeld(now()),
  });
  const receipts = createReceiptBook({
    sms,
    scheduler,
    log,
    now,
    freshMs: tuning.receiptBookMs,
    wake: (jobIds) => commit(() => jobs.receiptsDue(jobIds, now())),
  });
  const deps: OutboundDeps = {
    tokens,
    jobs,
    commit,
    tokenService: installs.tokenService,
    sms,
    scheduler,
    holds,
    receiptBook: receipts,
    sentKeys: gatewayKeys,
    crm,
    defaults: { apiKey: config.sms.apiKey, senderId: config.sms.senderId, allowedCompanyIds: config.allowedCompanyIds },
    now,
    log,
    reportBackoffMs: tuning.reportBackoffMs,
    reportAttempts: tuning.reportAttempts,
    storeRetryMs: tuning.resultStoreRetryMs,
    maxParts: config.sms.maxParts,
    holdMaxMs: config.sms.holdMaxMs,
    sendBackoffMs: tuning.sendBackoffMs,
    dlrWaitMs: config.sms.dlrWaitMs,
    receiptPollMs: tuning.receiptPollMs,
    receiptGraceMs: tuning.receiptGraceMs,
    optOuts: optOutList,
    unsubscribed: createUnsubscribedLists({ read: castUnsubscribed, log, now: Date.now }),
    metrics,
    outages,
  };
  return { processOutbound: (job) => processOutbound(deps, job), receipts, holds };
}
