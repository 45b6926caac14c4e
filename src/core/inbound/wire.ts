import type { Calls, Context, Delivery, Inbound, Installs, Stores } from "../core-types.ts";
import { createPhoneWebhook } from "./phone-webhook.ts";
import { deliverInbound, type DeliverDeps } from "./deliver.ts";
import { createInboundQueue } from "./queue.ts";
import { createSink } from "./sink.ts";
import type { InboundSink } from "./reply.ts";

/**
 * Replies: the sink the sources hand them to (stop words change the opt-out lists there),
 * the queue that delivers them to HighLevel with the installs' tokens, and the phones' webhook
 * (received texts to the sink; status events recorded, which rings the worker's doorbell).
 */
export function wireInbound(context: Context, stores: Stores, { crm }: Calls, installs: Installs, delivery: Pick<Delivery, "doorbell" | "settleReceipt">): Inbound {
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
  const queue = createInboundQueue({ store: replies, deliver: (id) => deliverInbound(deps, id), now, log });
  const sink = createSink({
    store: replies,
    providerId,
    locationsOfDevice: (deviceId) => phones.locationsOfDevice(deviceId),
    now,
    log,
    notify: () => queue.notify(),
  });
  // A status event's receipt is settled by delivery; the webhook only hands it over.
  const { settleReceipt } = delivery;
  const phoneWebhook = (to: InboundSink = sink) => createPhoneWebhook({ phones, phoneJobs, jobs, sink: to, log, now, settleReceipt });
  return { sink, queue, phoneWebhook };
}
