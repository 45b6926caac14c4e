import { setTimeout as sleep } from "node:timers/promises";
import type { Handler, Recorded } from "./http.ts";
import { jsonResponse } from "./http.ts";
import { fixture } from "./fixtures.ts";

/** A contact the fake CRM holds, made by POST /contacts/upsert. */
export interface FakeContact {
  id: string;
  locationId: string;
  phone: string;
  /** The SMS DND status last set ("" : never set). */
  smsDnd: string;
}

/** A reply HighLevel took into a conversation, or dropped. */
export interface FakeInbound {
  body: Record<string, unknown>;
  /** HighLevel's message id; "" when it dropped the message (no conversationProviderId). */
  messageId: string;
}

/**
 * HighLevel's contacts and inbound messages, as bridge's replies meet them, in the shapes
 * of test/fixtures/highlevel (the copy of ../shared/fixtures/highlevel): an upsert
 * finds the contact of a phone in a location or makes it (contacts-upsert-200.json);
 * an inbound message is taken (inbound-message-200.json), or, without
 * conversationProviderId, answered 201 with an empty body and dropped, as HighLevel does
 * for a custom provider (fixtures README, note 10). `down`: both answer this status.
 * `delayMs`: an inbound message is taken (recorded) at once and answered this much later,
 * so a crash can come between HighLevel taking it and bridge hearing so; `onInbound` is
 * told of each one as it is taken, before that answer.
 * The lookups of a reply whose post got no clear answer: `GET /conversations/search`
 * lists the contact's conversation once it holds a message (conversations-search-200.json),
 * and `GET /conversations/{id}/messages` its messages newest first, in pages of `limit`
 * before `lastMessageId` (conversation-messages-200.json; `wrapped`: inside `messages`, the
 * other shape the fixtures README's note 14 names). `lookupDown`: both answer this status.
 */
export function createReplies() {
  const contacts: FakeContact[] = [];
  const inbound: FakeInbound[] = [];
  const state: { down: number; delayMs: number; lookupDown: number; wrapped: boolean; onInbound?: (body: Record<string, unknown>) => void } = {
    down: 0,
    delayMs: 0,
    lookupDown: 0,
    wrapped: false,
  };
  let serial = 0;

  const upsert: Handler = (req) => {
    if (state.down) return jsonResponse({ message: "Service Unavailable" }, state.down);
    const body = JSON.parse(req.body) as { locationId: string; phone: string; dndSettings?: { SMS?: { status: string } } };
    let contact = contacts.find((c) => c.locationId === body.locationId && c.phone === body.phone);
    const isNew = !contact;
    if (!contact) contacts.push((contact = { id: `contact-${++serial}`, locationId: body.locationId, phone: body.phone, smsDnd: "" }));
    if (body.dndSettings?.SMS) contact.smsDnd = body.dndSettings.SMS.status;
    const documented = fixture("highlevel", "contacts-upsert-200.json") as { contact: Record<string, unknown> };
    const dndSettings = { SMS: { status: contact.smsDnd || "inactive", message: "", code: "" } };
    return jsonResponse({
      ...documented,
      new: isNew,
      contact: { ...documented.contact, id: contact.id, locationId: contact.locationId, phone: contact.phone, dnd: contact.smsDnd === "active", dndSettings },
    });
  };

  const message: Handler = async (req: Recorded) => {
    if (state.down) return jsonResponse({ message: "Service Unavailable" }, state.down);
    const body = JSON.parse(req.body) as Record<string, unknown>;
    if (!body.conversationProviderId) {
      inbound.push({ body, messageId: "" });
      return new Response(null, { status: 201 });
    }
    const messageId = `inbound-msg-${++serial}`;
    inbound.push({ body, messageId });
    state.onInbound?.(body);
    if (state.delayMs) await sleep(state.delayMs);
    const documented = fixture("highlevel", "inbound-message-200.json");
    return jsonResponse({ ...documented, conversationId: `conv-${String(body.contactId)}`, messageId, message: body.message, contactId: body.contactId });
  };

  const search: Handler = (req) => {
    if (state.lookupDown) return jsonResponse({ message: "Service Unavailable" }, state.lookupDown);
    const contactId = req.query.get("contactId");
    const contact = contacts.find((c) => c.id === contactId && c.locationId === req.query.get("locationId"));
    const held = contact ? inbound.filter((m) => m.messageId && m.body.contactId === contact.id) : [];
    const [documented] = (fixture("highlevel", "conversations-search-200.json") as { conversations: Record<string, unknown>[] }).conversations;
    const last = held.at(-1)?.body;
    const conversations =
      contact && last ? [{ ...documented, id: `conv-${contact.id}`, contactId: contact.id, locationId: contact.locationId, lastMessageBody: last.message, phone: contact.phone }] : [];
    return jsonResponse({ conversations, total: conversations.length });
  };

  const messages: Handler = (req) => {
    if (state.lookupDown) return jsonResponse({ message: "Service Unavailable" }, state.lookupDown);
    const conversationId = decodeURIComponent(req.path.split("/")[2] ?? "");
    const contact = contacts.find((c) => `conv-${c.id}` === conversationId);
    if (!contact) return jsonResponse({ message: "Conversation not found" }, 404);
    const newestFirst = inbound.filter((m) => m.messageId && m.body.contactId === contact.id).reverse();
    const after = newestFirst.findIndex((m) => m.messageId === req.query.get("lastMessageId"));
    const limit = Number(req.query.get("limit") ?? 20);
    const page = newestFirst.slice(after + 1, after + 1 + limit);
    const [documented] = (fixture("highlevel", "conversation-messages-200.json") as { messages: Record<string, unknown>[] }).messages;
    const list = page.map(({ body, messageId }) => ({
      ...documented,
      id: messageId,
      locationId: contact.locationId,
      contactId: contact.id,
      conversationId,
      dateAdded: new Date(String(body.date)).toISOString(),
      body: body.message,
      conversationProviderId: body.conversationProviderId,
    }));
    const answer = { lastMessageId: page.at(-1)?.messageId ?? "", nextPage: after + 1 + limit < newestFirst.length, messages: list };
    return jsonResponse(state.wrapped ? { messages: answer, traceId: "trace-1" } : answer);
  };

  return {
    routes: {
      "POST /contacts/upsert": upsert,
      "POST /conversations/messages/inbound": message,
      "GET /conversations/search": search,
      "GET /conversations/:conversationId/messages": messages,
    },
    contacts,
    inbound,
    state,
  };
}
