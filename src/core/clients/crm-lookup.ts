import { z } from "zod";
import { CrmError } from "../../errors.ts";
import { ID_PATTERN } from "../ids.ts";
import { MESSAGES_API_VERSION, parse, statusError } from "./crm-answers.ts";
import type { CrmCalls } from "./crm-types.ts";

/**
 * Finding a reply in HighLevel whose post got no clear answer (a timeout, a 5xx, a stop
 * mid-post): the contact's conversations, then their SMS, newest first. HighLevel returns
 * no altId on a message, so a reply is known by what was posted (fixtures README, note 14).
 */

/** A reply as it was posted to `POST /conversations/messages/inbound`. */
export interface PostedReply {
  locationId: string;
  contactId: string;
  message: string;
  /** ISO 8601, the `date` posted */
  date: string;
  conversationProviderId: string;
}

/** Messages asked for a page; pages read back at most (past the reply's date, the read stops). */
const PAGE_LIMIT = 100;
const MAX_PAGES = 10;
/** HighLevel may keep the posted date to the second only. */
const DATE_SLACK_MS = 1000;

const crmId = z.string().regex(ID_PATTERN);
const searchSchema = z.object({ conversations: z.array(z.object({ id: crmId })) });
// Each message is read field by field: one odd message must not make the page unreadable.
const pageSchema = z.object({
  lastMessageId: z.string().nullish(),
  nextPage: z.boolean().nullish(),
  messages: z.array(z.record(z.string(), z.unknown())),
});
// Flat, as the spec documents it, or wrapped in `messages`, as a client library types it (note 14).
const messagesSchema = z.union([pageSchema, z.object({ messages: pageSchema }).transform((wrapped) => wrapped.messages)]);

type Page = z.output<typeof pageSchema>;

/**
 * HighLevel's ids of the messages that match the reply (inbound, the contact, the
 * provider, the body, the date): none when it is not there. A CrmError when a call fails,
 * or when the conversation could not be read back to the reply's date.
 */
export async function findInboundMessages(crm: CrmCalls, locationToken: string, reply: PostedReply): Promise<string[]> {
  const found: string[] = [];
  for (const conversationId of await conversationsOf(crm, locationToken, reply)) {
    found.push(...(await matchesIn(crm, locationToken, conversationId, reply)));
  }
  return found;
}

async function conversationsOf(crm: CrmCalls, token: string, reply: PostedReply): Promise<string[]> {
  const res = await crm.request("/conversations/search", {
    operation: "searchConversations",
    method: "GET",
    token,
    version: MESSAGES_API_VERSION,
    query: { locationId: reply.locationId, contactId: reply.contactId },
  });
  if (res.status !== 200) throw statusError("conversation search endpoint", "bearer", res);
  return parse(res.text, searchSchema, "failed to parse conversation search response").conversations.map((c) => c.id);
}

async function matchesIn(crm: CrmCalls, token: string, conversationId: string, reply: PostedReply): Promise<string[]> {
  const dateMs = Date.parse(reply.date);
  const found: string[] = [];
  let before: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { messages, nextPage, lastMessageId } = await messagesPage(crm, token, conversationId, before);
    for (const m of messages) if (matches(m, reply, dateMs) && typeof m.id === "string" && ID_PATTERN.test(m.id)) found.push(m.id);
    // Newest first: a page that reaches back past the reply's date holds the last place it could be.
    const passed = messages.some((m) => typeof m.dateAdded === "string" && Date.parse(m.dateAdded) < dateMs - DATE_SLACK_MS);
    if (passed || !nextPage || !lastMessageId) return found;
    before = lastMessageId;
  }
  throw new CrmError("unclear", `conversation ${conversationId} has more than ${MAX_PAGES * PAGE_LIMIT} messages since the reply: not read back to it`);
}

async function messagesPage(crm: CrmCalls, token: string, conversationId: string, lastMessageId: string | undefined): Promise<Page> {
  const res = await crm.request(`/conversations/${encodeURIComponent(conversationId)}/messages`, {
    operation: "conversationMessages",
    method: "GET",
    token,
    version: MESSAGES_API_VERSION,
    query: { limit: PAGE_LIMIT, type: "TYPE_SMS", ...(lastMessageId ? { lastMessageId } : {}) },
  });
  if (res.status !== 200) throw statusError("conversation messages endpoint", "bearer", res);
  return parse(res.text, messagesSchema, "failed to parse conversation messages response");
}

function matches(m: Record<string, unknown>, reply: PostedReply, dateMs: number): boolean {
  if (m.direction !== "inbound" || m.body !== reply.message) return false;
  if (m.contactId !== reply.contactId || m.conversationProviderId !== reply.conversationProviderId) return false;
  return typeof m.dateAdded === "string" && Math.abs(Date.parse(m.dateAdded) - dateMs) < DATE_SLACK_MS;
}
