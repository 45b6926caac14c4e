import { z } from "zod";
import { ID_PATTERN, ID_RULE } from "../ids.ts";

/** The shapes of HighLevel's contact upsert and inbound message, as bridge's replies use them (crm.ts makes the calls). */

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
