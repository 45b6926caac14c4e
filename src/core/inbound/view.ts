import type { InboundFilter, InboundRow, InboundState, InboundStore } from "../../db/inbound.ts";
import { iso } from "../duration.ts";
import { maskPhone } from "../mask.ts";

/** A reply's status as the operator reads it. */
export const REPLY_STATUSES = ["unrouted", "queued", "posting", "posted", "failed"] as const;
export type ReplyStatus = (typeof REPLY_STATUSES)[number];

const STATE_OF: Record<ReplyStatus, InboundState> = { unrouted: "unrouted", queued: "queued", posting: "posting", posted: "done", failed: "dead" };

/** A reply in the operator's view: the sender masked, times ISO 8601. */
export interface ReplyView {
  id: string;
  direction: "inbound";
  location_id: string;
  /** `0917***4567` */
  from: string;
  status: ReplyStatus;
  routed_by: string;
  source: string;
  device_id: string;
  crm_message_id: string | null;
  error: string | null;
  attempts: number;
  received_at: string;
}

/** Replies newest first; `status`: only those in it (undefined: all). */
export function listReplies(store: InboundStore, filter: Omit<InboundFilter, "states"> & { status?: ReplyStatus }): ReplyView[] {
  const states = filter.status && [STATE_OF[filter.status]];
  return store.list({ ...filter, states }).map(replyView);
}

export function isReplyStatus(status: string): status is ReplyStatus {
  return (REPLY_STATUSES as readonly string[]).includes(status);
}

function replyView(row: InboundRow): ReplyView {
  const status = (Object.keys(STATE_OF) as ReplyStatus[]).find((s) => STATE_OF[s] === row.state) ?? "failed";
  return {
    id: row.inboundId,
    direction: "inbound",
    location_id: row.locationId,
    from: maskPhone(row.phone),
    status,
    routed_by: row.routedBy,
    source: row.source,
    device_id: row.deviceId,
    crm_message_id: row.crmMessageId,
    error: row.error,
    attempts: row.attempts,
    received_at: iso(row.createdAt),
  };
}
