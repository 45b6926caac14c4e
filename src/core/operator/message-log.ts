import type { InboundStore } from "../../store/contract.ts";
import { MESSAGE_STATUSES } from "../../db/messages.ts";
import type { MessageLog } from "../../store/contract.ts";
import { AppError } from "../../errors.ts";
import { isReplyStatus, listReplies, REPLY_STATUSES, showReply, type ReplyDetail, type ReplyView } from "../inbound/view.ts";
import { listMessages, messageFilter, showMessage, type MessageDetail, type MessageQuery, type MessageView } from "./messages.ts";

/** Every status a query may name: a message's, a reply's, or one both have (queued, failed). */
const STATUSES = [...new Set<string>([...MESSAGE_STATUSES, ...REPLY_STATUSES])];

/** A page of the log: messages sent, and the replies received. */
export interface LogPage {
  messages: MessageView[];
  next_cursor: string | null;
  replies: ReplyView[];
}

/**
 * The messages sent and the replies received that a query asks for (docs/http.md,
 * `GET /api/admin/messages`): a status only one side has reads only that side. Replies
 * come, newest first up to `limit`, on the first page only (no `cursor`): a script that
 * follows `next_cursor` through the messages meets each reply once.
 */
export async function listLog(log: MessageLog, replies: InboundStore, query: MessageQuery, now: number): Promise<LogPage> {
  const { status } = query;
  if (status !== undefined && !STATUSES.includes(status)) throw new AppError("BAD_QUERY", `status: must be one of ${STATUSES.join(", ")}`);
  const messagesToo = status === undefined || (MESSAGE_STATUSES as readonly string[]).includes(status);
  const filter = messageFilter({ ...query, status: messagesToo ? status : undefined }, now);
  const page = messagesToo ? await listMessages(log, filter) : { messages: [], next_cursor: null };
  const replyStatus = status !== undefined && isReplyStatus(status) ? status : undefined;
  const repliesToo = query.cursor === undefined && (status === undefined || replyStatus !== undefined);
  const { locationId, since, limit } = filter;
  return { ...page, replies: repliesToo ? await listReplies(replies, { locationId, since, limit, status: replyStatus }) : [] };
}

/**
 * A message sent, or a reply received, by the id the log lists it under (docs/http.md,
 * `GET /api/admin/messages/{id}`); neither is MESSAGE_NOT_FOUND.
 */
export async function showLogEntry(log: MessageLog, replies: InboundStore, id: string): Promise<MessageDetail | ReplyDetail> {
  if (await log.get(id)) return showMessage(log, id);
  return (await showReply(replies, id)) ?? await showMessage(log, id);
}
