import type { Clients, Context, Core, Stores } from "../core-types.ts";
import type { Installs } from "../installs/wire.ts";
import type { Doorbell } from "../delivery/doorbell.ts";
import { createPhoneWebhook } from "./phone-webhook.ts";
import { deliverInbound, type DeliverDeps } from "./deliver.ts";
import { createInboundQueue } from "./queue.ts";
import { createSink } from "./sink.ts";
import type { InboundSink } from "./reply.ts";

/** What the inbound room gives the core. */
export type Inbound = Pick<Core, "inbound" | "inboundQueue" | "phoneWebhook">;

/**
 * Replies: the sink the sources hand them to (stop words change the opt-out lists there),
 * the queue that delivers them to HighLevel with the installs' tokens, and the phones' webhook
 * (received texts to the sink; status events recorded, which rings the worker's doorbell).
 */
export function wireInbound(context: Context, stores: Stores, { crm }: Clients, installs: Installs, doorbell: Doorbell): Inbound {
  const { config, log, now, tuning } = context;
  const { replies, phones, phoneJobs, jobs } = stores;
  const providerId = config.crm.providerId;
  const deps: DeliverDeps = {
    store: replies,
    crm,
    tokenService: installs.tokenService,
    providerId,
    now,
    log,
    backoffMs: tuning.reportBackoffMs,
    attempts: tuning.reportAttempts,
    storeRetryMs: tuning.resultStoreRetryMs,
  };
  const inboundQueue = createInboundQueue({ store: replies, deliver: (id) => deliverInbound(deps, id), now, log });
  const inbound = createSink({
    store: replies,
    providerId,
    locationsOfDevice: (deviceId) => phones.locationsOfDevice(deviceId),
    now,
    log,
    notify: () => inboundQueue.notify(),
  });
  const phoneWebhook = (sink: InboundSink = inbound) => createPhoneWebhook({ phones, phoneJobs, jobs, sink, log, now, notify: doorbell.ring });
  return { inbound, inboundQueue, phoneWebhook };
}
