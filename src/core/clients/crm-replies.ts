import { z } from "zod";
import { CrmError, clip } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import { LOCATION_API_VERSION, MESSAGES_API_VERSION, parse, statusError } from "./crm-answers.ts";
import type { CrmCalls } from "./crm-types.ts";

/** HighLevel's contact upsert and inbound message, as bridge's replies use them. */

/** A reply's contact, as `POST /contacts/upsert` takes it. */
export interface ContactUpsert {
  locationId: string;
  /** E.164 */
  phone: string;
  /** "stop": SMS DND set (a stop word); "start": lifted; undefined: left as it is. */
  dnd?: "stop" | "start";
}

/** A reply, as `POST /conversations/messages/inbound` takes it (type SMS, direction inbound). */
export interface InboundMessage {
  contactId: string;
  message: string;
  /** bridge's id of the reply. */
  altId: string;
  /** ISO 8601 */
  date: string;
  conversationProviderId: string;
}

/** The upsert's body: SMS DND set for a stop word, lifted for a start word, as HighLevel's dndSettings writes it. */
export function upsertBody({ locationId, phone, dnd }: ContactUpsert) {
  if (!dnd) return { locationId, phone };
  const status = dnd === "stop" ? "active" : "inactive";
  const message = dnd === "stop" ? "opted out by SMS" : "opted in again by SMS";
  return { locationId, phone, dndSettings: { SMS: { status, message } } };
}

const crmId = z.string().regex(ID_PATTERN, `not an id (${ID_RULE})`);

export const upsertSchema = z.object({ contact: z.object({ id: crmId }) });

/** HighLevel's answer to an inbound message, or undefined when it has no message id (an empty 201: dropped). */
export function inboundAnswer(text: string): { messageId: string } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const answer = z.object({ messageId: crmId }).safeParse(json);
  return answer.success ? answer.data : undefined;
}

/** `POST /contacts/upsert`: the contact of `phone` in the location, made if new; its id. `dnd`: its SMS DND set or lifted. */
export async function upsertContact(crm: CrmCalls, locationToken: string, contact: ContactUpsert): Promise<string> {
  const res = await postJson(crm, "/contacts/upsert", "upsertContact", locationToken, LOCATION_API_VERSION, upsertBody(contact));
  if (res.status < 200 || res.status > 299) throw statusError("contacts upsert endpoint", "bearer", res);
  return parse(res.text, upsertSchema, "failed to parse contacts upsert response").contact.id;
}

/**
 * `POST /conversations/messages/inbound`: a reply into the contact's conversation; HighLevel's
 * message id. A 2xx without one is HighLevel dropping it (a custom provider's message
 * without a valid conversationProviderId gets 201 with an empty body).
 */
export async function addInboundMessage(crm: CrmCalls, locationToken: string, message: InboundMessage): Promise<string> {
  const body = { type: "SMS", direction: "inbound", ...message };
  const res = await postJson(crm, "/conversations/messages/inbound", "addInboundMessage", locationToken, MESSAGES_API_VERSION, body);
  if (res.status < 200 || res.status > 299) throw statusError("inbound message endpoint", "bearer", res);
  const answer = inboundAnswer(res.text);
  if (!answer) {
    // Taken and dropped: posting it again could show it twice once the cause is mended.
    throw new CrmError("rejected", `inbound message endpoint answered ${res.status} without a message id (${clip(res.text) || "empty body"}): HighLevel dropped it`);
  }
  return answer.messageId;
}

function postJson(crm: CrmCalls, path: string, operation: string, token: string, version: string, body: unknown) {
  return crm.request(path, { operation, method: "POST", token, version, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}
