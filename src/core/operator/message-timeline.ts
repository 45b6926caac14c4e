import type { LoggedMessage, MessageEvent } from "../../store/types.ts";
import { iso } from "../duration.ts";

/** One line of a message's timeline, as the operator reads it. */
export interface TimelineEntry {
  at: string;
  event: string;
  detail: string;
}

/**
 * Received, sent, receipt, reported, and each recorded error, hold and retry, by time.
 * A phone's message is told in the phone's terms: "sending" to the phone, "taken" by it
 * (it holds the message, not yet sent), then "sent" only once the phone said it sent it.
 */
export function timeline(m: LoggedMessage, events: MessageEvent[]): TimelineEntry[] {
  const entries: { at: number; event: string; detail: string }[] = [{ at: m.createdAt, event: "received", detail: "from HighLevel" }];
  for (const e of events) entries.push({ at: e.at, event: e.kind, detail: e.detail });
  if (m.firstSentAt !== null) entries.push({ at: m.firstSentAt, event: "sending", detail: sending(m) });
  if (m.sentAt !== null) entries.push({ at: m.sentAt, ...accepted(m) });
  if (m.receiptAt !== null) {
    // A phone's message without its final state is not taken as delivered (receipts.ts, noReceipt).
    const none = m.outcome === "failed" ? "no final state from the phone by the end of its wait: delivery unknown" : "no delivery receipt within DLR_WAIT: reported delivered";
    const said = m.receipt === "none" ? none : `carrier receipt ${m.receipt}`;
    entries.push({ at: m.receiptAt, event: "receipt", detail: said });
  }
  if (m.reportedAt !== null) entries.push({ at: m.reportedAt, event: "reported", detail: `HighLevel told ${m.reportedStatus}` });
  // Stable: at equal times, the order above (the order things happen in).
  return entries.sort((a, b) => a.at - b.at).map((e) => ({ at: iso(e.at), event: e.event, detail: e.detail }));
}

function sending(m: LoggedMessage): string {
  const key = m.idempotencyKey ?? "(none)";
  return m.deviceId === null ? `to ${m.gateway}, idempotency key ${key}` : `to the phone (device ${m.deviceId}), message id ${key}`;
}

/** The gateway's acceptance: Cast's is the message sent; a phone's only that the phone holds it. */
function accepted(m: LoggedMessage): { event: string; detail: string } {
  const parts = `${m.parts ?? "?"} part(s)`;
  if (m.deviceId !== null) return { event: "taken", detail: `by the phone as ${m.gatewayMessageId}, ${parts}` };
  const sender = m.senderId ? `sender ID ${m.senderId}` : "the gateway's default sender ID";
  return { event: "sent", detail: `accepted by ${m.gateway} as ${m.gatewayMessageId}, ${parts}, ${sender}` };
}
