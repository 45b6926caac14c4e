import { MESSAGE_STATUSES } from "../../db/messages.ts";
import type { MessageLog } from "../../store/contract.ts";
import type { LoggedMessage, MessageFilter, MessageStatus } from "../../store/types.ts";
import { iso, pointInTime } from "../duration.ts";
import { AppError } from "../../errors.ts";
import { ID_RULE, isId } from "../ids.ts";
import { maskPhone } from "../mask.ts";
import { composeText, smsParts } from "../parts.ts";
import { timeline, type TimelineEntry } from "./message-timeline.ts";

/**
 * The message log as the operator reads it (docs/cli.md, "The message log"): one code path for
 * `bridge messages …` and the admin API. Phones are masked, times are ISO 8601.
 */
export interface MessageView {
  message_id: string;
  location_id: string;
  contact_id: string;
  /** `0917***4567` */
  phone: string;
  status: MessageStatus;
  /** Characters of the text as sent (attachment URLs included). */
  length: number;
  parts: number;
  /** "" : the gateway's default; null: not sent. */
  sender_id: string | null;
  /** "cast", or "android": a phone. */
  gateway: string;
  /** The phone it went through; null for Cast's. */
  device_id: string | null;
  gateway_message_id: string | null;
  /** The carrier's final word (DELIVRD, REJECTD, …), or "none" when none came in time. */
  receipt: string | null;
  reported_status: string | null;
  reported_at: string | null;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  received_at: string;
  sent_at: string | null;
  updated_at: string;
}

export type { TimelineEntry };

export interface MessageDetail extends MessageView {
  idempotency_key: string | null;
  timeline: TimelineEntry[];
}

export interface RetryOutcome {
  queued: string[];
  refused: { message_id: string; reason: string }[];
}

export const MAX_PAGE = 500;

export function messageNotFound(messageId: string): AppError {
  return new AppError("MESSAGE_NOT_FOUND", `message not found: ${messageId}`);
}

/** A page of messages, newest first, and the cursor of the next page (null: no more). */
export async function listMessages(log: MessageLog, filter: MessageFilter): Promise<{ messages: MessageView[]; next_cursor: string | null }> {
  const found = await log.list({ ...filter, limit: filter.limit + 1 });
  const page = found.slice(0, filter.limit);
  const last = page.at(-1);
  const more = found.length > filter.limit && last !== undefined;
  return { messages: page.map(messageView), next_cursor: more ? encodeCursor(last) : null };
}

export async function showMessage(log: MessageLog, messageId: string): Promise<MessageDetail> {
  const message = await log.get(messageId);
  if (!message) throw messageNotFound(messageId);
  return { ...messageView(message), idempotency_key: message.idempotencyKey, timeline: timeline(message, await log.events(message.id)) };
}

/**
 * Why a failed message may not be sent again, or undefined when it may: only a message
 * that provably never reached the carrier is retried, never one it delivered or may have.
 */
export function retryRefusal(message: LoggedMessage): string | undefined {
  if (message.outcome !== "failed") return `it has not failed (it is ${message.status})`;
  // The number is the message's own: queued again, it would fail the same way at once.
  if (message.errorCode === "invalid_phone") return `its number cannot be sent to (${message.errorMessage ?? "not a Philippine mobile number"})`;
  // Cast's own FAILED receipt: it never handed the message to a carrier (credits refunded).
  const neverSubmitted = message.receipt === "FAILED";
  if (!neverSubmitted && (message.gatewayMessageId !== null || message.receipt !== null)) {
    const answer = message.receipt ? ` and the carrier answered ${message.receipt}` : "";
    return `the gateway accepted it${answer}: it reached the carrier`;
  }
  if (message.unclear || message.errorCode === "delivery_unknown") {
    return "an attempt got no clear answer from the gateway: it may have been delivered";
  }
  if (message.state === "reporting") return "its failure is still being reported to HighLevel; retry once that is done";
  return undefined;
}

/** Queues the named messages again where `retryRefusal` allows; says why for the others. */
export async function retryMessages(log: MessageLog, messageIds: string[], now: number): Promise<RetryOutcome> {
  const outcome: RetryOutcome = { queued: [], refused: [] };
  for (const messageId of new Set(messageIds)) {
    const message = await log.get(messageId);
    if (!message) outcome.refused.push({ message_id: messageId, reason: `message not found: ${messageId}` });
    else await retryOne(log, message, now, outcome);
  }
  return outcome;
}

/** `--failed`: every failed message (of a location, since a time) that may be retried. */
export async function retryFailed(log: MessageLog, filter: Omit<MessageFilter, "status" | "limit" | "before">, now: number): Promise<RetryOutcome> {
  const outcome: RetryOutcome = { queued: [], refused: [] };
  const failed: LoggedMessage[] = [];
  // Read every page first: a message queued again leaves `failed`, which would shift the pages.
  for (let before: MessageFilter["before"]; ; ) {
    const page = await log.list({ ...filter, status: "failed", before, limit: MAX_PAGE });
    failed.push(...page);
    const last = page.at(-1);
    if (page.length < MAX_PAGE || !last) break;
    before = { createdAt: last.createdAt, id: last.id };
  }
  for (const message of failed) await retryOne(log, message, now, outcome);
  return outcome;
}

async function retryOne(log: MessageLog, message: LoggedMessage, now: number, outcome: RetryOutcome): Promise<void> {
  const messageId = message.message.messageId;
  const refusal = retryRefusal(message);
  if (refusal) return void outcome.refused.push({ message_id: messageId, reason: refusal });
  const was = `${message.errorCode ?? "failed"}: ${message.errorMessage ?? ""}`;
  const told = message.reportedAt ? `; HighLevel had been told ${message.reportedStatus} at ${iso(message.reportedAt)}` : "";
  if (await log.requeue(message, now, `queued again by an operator; it had failed (${was})${told}`)) outcome.queued.push(messageId);
  else outcome.refused.push({ message_id: messageId, reason: "it changed while being retried; look at it again" });
}

export function messageView(m: LoggedMessage): MessageView {
  const text = composeText(m.message);
  return {
    message_id: m.message.messageId,
    location_id: m.message.locationId,
    contact_id: m.message.contactId,
    phone: maskPhone(m.message.phone),
    status: m.status,
    length: text.length,
    parts: m.parts ?? smsParts(text).parts,
    sender_id: m.senderId,
    gateway: m.gateway,
    device_id: m.deviceId,
    gateway_message_id: m.gatewayMessageId,
    receipt: m.receipt,
    reported_status: m.reportedStatus,
    reported_at: isoOrNull(m.reportedAt),
    error_code: m.errorCode,
    error_message: m.errorMessage,
    attempts: m.attempts,
    received_at: iso(m.createdAt),
    sent_at: isoOrNull(m.sentAt),
    updated_at: iso(m.updatedAt),
  };
}

/** The cursor of the page after `last`: opaque to clients. */
export function encodeCursor(last: Pick<LoggedMessage, "createdAt" | "id">): string {
  return Buffer.from(`${last.createdAt}.${last.id}`).toString("base64url");
}

export function decodeCursor(cursor: string): MessageFilter["before"] {
  const match = /^(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString());
  return match ? { createdAt: Number(match[1]), id: Number(match[2]) } : undefined;
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : iso(ms);
}

/** What a caller may ask the log for, as strings (the command line, a query string). */
export interface MessageQuery {
  location?: string;
  status?: string;
  since?: string;
  limit?: string;
  cursor?: string;
}

/** Checks a query; a bad value is a BAD_QUERY AppError (400) saying what is wrong. */
export function messageFilter(query: MessageQuery, now: number, maxLimit = MAX_PAGE): MessageFilter {
  const filter: MessageFilter = { limit: 50 };
  if (query.location !== undefined) {
    if (!isId(query.location)) throw badQuery(`location: not a location id (it ${ID_RULE})`);
    filter.locationId = query.location;
  }
  if (query.status !== undefined) {
    const status = MESSAGE_STATUSES.find((s) => s === query.status);
    if (!status) throw badQuery(`status: must be one of ${MESSAGE_STATUSES.join(", ")}`);
    filter.status = status;
  }
  if (query.since !== undefined) {
    filter.since = pointInTime(query.since, now);
    if (filter.since === undefined) throw badQuery("since: must be an ISO 8601 time (2026-11-24T08:00:00Z) or a duration (15m, 2h, 7d)");
  }
  if (query.limit !== undefined) {
    const limit = Number(query.limit);
    if (!/^\d+$/.test(query.limit) || limit < 1 || limit > maxLimit) throw badQuery(`limit: must be a whole number from 1 to ${maxLimit}`);
    filter.limit = limit;
  }
  if (query.cursor !== undefined) {
    filter.before = decodeCursor(query.cursor);
    if (!filter.before) throw badQuery("cursor: not a cursor this server gave out (use next_cursor as it came)");
  }
  return filter;
}

function badQuery(message: string): AppError {
  return new AppError("BAD_QUERY", message);
}
