import type { Clients, Context, Core, Stores } from "../core-types.ts";
import type { Installs } from "../installs/wire.ts";
import { deliverInbound, type DeliverDeps } from "./deliver.ts";
import { createInboundQueue } from "./queue.ts";
import { createSink } from "./sink.ts";

/** What the inbound room gives the core. */
export type Inbound = Pick<Core, "inbound" | "inboundQueue">;

/**
 * Replies: the sink the sources hand them to (stop words change the opt-out lists there),
 * and the queue that delivers them to HighLevel with the installs' tokens.
 */
export function wireInbound({ config, log, now, tuning }: Context, { replies, phones }: Stores, { crm }: Clients, installs: Installs): Inbound {
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
  return { inbound, inboundQueue };
}
