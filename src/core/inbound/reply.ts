/**
 * The seams of two-way SMS (docs/architecture.md, room `inbound/`). A source (a phone's
 * `sms:received` webhook, or `POST /api/inbound`) hands each text it received to an
 * InboundSink; the sink commits it before the source answers 200, and the inbound room
 * delivers it to HighLevel later. Opt-outs read every reply for a stop word.
 */

/** The opt-out lists, which delivery reads too, are on core's ground floor (../opt-out-list.ts). */
export type { OptOutList } from "../opt-out-list.ts";

/** A text someone sent to one of bridge's numbers, as its source hands it over. */
export interface InboundReply {
  /** "android": a phone's `sms:received` webhook; "api": `POST /api/inbound`. */
  source: "android" | "api";
  /** The number that sent it, as the source wrote it. */
  from: string;
  text: string;
  /** The number or device line that received it, when the source says. */
  to?: string;
  /** The location it is for, when the source says (`location_id` of /api/inbound). */
  locationId?: string;
  /** The phone that received it (the webhook envelope's `deviceId`). */
  deviceId?: string;
  /** When it was received, as the source wrote it (the phone: device local time with offset). */
  receivedAt?: string;
  /** The source's own id (`id` of /api/inbound; the phone's envelope id is not one: it differs between duplicates). */
  sourceId?: string;
}

/** What became of a handed-over reply: committed, either now or by an earlier copy. */
export interface Received {
  /** bridge's id of the inbound message (HighLevel's `altId`). */
  id: string;
  /** An earlier copy of the same reply was committed: nothing new stored. */
  duplicate: boolean;
}

/** Where sources hand replies over. Settles once the reply is committed (the source may then answer 200). */
export interface InboundSink {
  receive(reply: InboundReply): Promise<Received>;
}
