import type { InboundStore } from "../../store/contract.ts";
import type { InboundFilter, InboundRow, InboundState } from "../../store/types.ts";
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

/** One reply in full, as `bridge messages show` and the admin API show it: its view, and what it said and to whom (masked). */
export interface ReplyDetail extends ReplyView {
  /** The number it was sent to (the phone's own), masked; "" when the source did not say. */
  to: string;
  /** Characters of its text. */
  length: number;
  /** A stop word (the sender opted out), a start word (opted back in), or "". */
  opt_out: string;
  /** When the source says it was received, as it wrote it; "" when it did not say. */
  received_at_source: string;
  updated_at: string;
}

/** The reply `bridge messages list` lists under `id`; undefined when there is none. */
export async function showReply(store: InboundStore, id: string): Promise<ReplyDetail | undefined> {
  const row = await store.get(id);
  if (!row) return undefined;
  const to = row.to ? maskPhone(row.to) : "";
  return { ...replyView(row), to, length: row.text.length, opt_out: row.optOut, received_at_source: row.receivedAt, updated_at: iso(row.updatedAt) };
}

/** Replies newest first; `status`: only those in it (undefined: all). */
export async function listReplies(store: InboundStore, filter: Omit<InboundFilter, "states"> & { status?: ReplyStatus }): Promise<ReplyView[]> {
  const states = filter.status && [STATE_OF[filter.status]];
  return (await store.list({ ...filter, states })).map(replyView);
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
