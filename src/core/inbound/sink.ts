import { createHash, randomUUID } from "node:crypto";
import type { InboundStore } from "../../store/contract.ts";
import type { NewInbound } from "../../store/types.ts";
import { AppError } from "../../errors.ts";
import { keyTag } from "../key-tag.ts";
import { toE164PH } from "../phone.ts";
import { phoneKey } from "../phone-key.ts";
import type { Logger } from "../log.ts";
import { maskPhone } from "../mask.ts";
import { printable } from "../printable.ts";
import type { InboundReply, InboundSink, Received } from "./reply.ts";
import { routeReply, type RouteLookups } from "./route.ts";
import { optOutWord } from "./stop-words.ts";

export interface SinkDeps {
  store: InboundStore;
  /** CRM_PROVIDER_ID: without it HighLevel drops every reply, so none is taken. */
  providerId: string;
  /** The locations a phone serves (the Android room's settings). */
  locationsOfDevice: RouteLookups["locationsOfDevice"];
  now: () => number;
  log: Logger;
  /** Told after each new reply is committed: the queue looks now. */
  notify?: () => void;
}

/** Said at start and in every refusal while CRM_PROVIDER_ID is unset. */
export const PROVIDER_ID_MISSING =
  "inbound messages are refused: CRM_PROVIDER_ID is not set; set it to the id of the app's conversation provider " +
  "(HighLevel drops an inbound message without it)";

/** A number as E.164: a Philippine mobile in any form, or any number already in E.164. */
export function e164(phone: string): string | undefined {
  const written = phone.trim();
  return toE164PH(written) ?? (/^\+[1-9]\d{6,14}$/.test(written) ? written : undefined);
}

/**
 * The InboundSink: each reply routed, then deduplicated and committed in one transaction
 * (the store's `receive`) before it settles, so the source answers 200 only for what is on
 * disk. A stop or start word changes the location's opt-out list in that same transaction.
 */
export function createSink(deps: SinkDeps): InboundSink {
  const { store, log } = deps;
  const lookups: RouteLookups = {
    installed: (locationId) => store.installed(locationId),
    locationsOfDevice: deps.locationsOfDevice,
    // A job sent through a phone holds its key's tag (the key is `android:<device>`): "through that device".
    lastSentTo: (e164, local, deviceId) => store.lastSentTo(e164, local, deviceId === undefined ? undefined : keyTag(phoneKey(deviceId))),
  };

  return {
    async receive(reply: InboundReply): Promise<Received> {
      if (!deps.providerId) throw new AppError("INBOUND_OFF", PROVIDER_ID_MISSING);
      const now = deps.now();
      const unrouted = newRow(reply, now);
      const row: NewInbound = { ...unrouted, ...await routeReply({ ...reply, phone: unrouted.phone }, lookups) };
      const earlier = await store.receive(row, now);
      if (earlier) return { id: earlier, duplicate: true };
      if (!row.locationId) {
        log.warn(`reply ${row.inboundId} from ${maskPhone(row.phone)} is for no known location: stored unrouted; route it with \`bridge messages route ${row.inboundId} LOCATION\``);
      } else if (row.optOut) {
        const change = row.optOut === "stop" ? "opted out: no message of the location goes to it" : "opted back in: the location's messages go to it again";
        log.info(`reply ${row.inboundId} from ${maskPhone(row.phone)} to location ${row.locationId} is a ${row.optOut} word; the number is ${change}`);
      }
      deps.notify?.();
      return { id: row.inboundId, duplicate: false };
    },
  };
}

type Unrouted = Omit<NewInbound, "locationId" | "routedBy">;

function newRow(reply: InboundReply, now: number): Unrouted {
  const phone = e164(reply.from);
  if (!phone) throw new AppError("BAD_INBOUND", `from is not a phone number: ${printable(reply.from.slice(0, 40))} (E.164, e.g. +639171234567)`);
  const receivedMs = reply.receivedAt === undefined ? now : Date.parse(reply.receivedAt);
  if (!Number.isFinite(receivedMs)) throw new AppError("BAD_INBOUND", "received_at is not an ISO 8601 time (e.g. 2026-11-24T08:00:00+08:00)");
  const inboundId = `in-${randomUUID()}`;
  return {
    inboundId,
    source: reply.source,
    dedupeKey: dedupeKey(reply, phone) ?? inboundId,
    phone,
    text: reply.text,
    to: reply.to ?? "",
    deviceId: reply.deviceId ?? "",
    receivedAt: reply.receivedAt ?? "",
    receivedMs,
    sourceId: reply.sourceId ?? "",
    optOut: optOutWord(reply.text) ?? "",
  };
}

/**
 * What copies of one reply share: the phone sends some twice with different envelope ids,
 * so its key is the device, sender, receivedAt and text; another source's is its own id.
 * undefined: nothing tells copies apart, each is its own reply.
 */
function dedupeKey(reply: InboundReply, phone: string): string | undefined {
  // A phone's copy without its receivedAt cannot be told from the same words sent again.
  const parts =
    reply.source === "android" && reply.receivedAt ? ["android", reply.deviceId ?? "", phone, reply.receivedAt, reply.text]
    : reply.sourceId ? [reply.source, reply.sourceId]
    : undefined;
  return parts && createHash("sha256").update(parts.join("\0")).digest("hex");
}
