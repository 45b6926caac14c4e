import type { FailureCode } from "./failures.ts";

/** What a webhook asks us to send, as stored with its job. */
export interface OutboundMessage {
  messageId: string;
  locationId: string;
  contactId: string;
  phone: string;
  message: string;
  attachments: string[];
}

export type JobState = "queued" | "sending" | "reporting" | "done" | "dead";
export type Outcome = "delivered" | "failed";

/** A row of the jobs table as the queue runs it; the message log reads the same and more (messages.ts). */
export interface Job {
  id: number;
  state: JobState;
  message: OutboundMessage;
  outcome: Outcome | null;
  errorCode: FailureCode | null;
  errorMessage: string | null;
  gatewayMessageId: string | null;
  attempts: number;
  /** The X-Idempotency-Key of every attempt at this send; null before the first. */
  idempotencyKey: string | null;
  /** When the first attempt went out; null before it. */
  firstSentAt: number | null;
  /** When the send Cast accepted was stored (the last attempt's): receipts count from it; null before. */
  sentAt: number | null;
  /** Which API key the attempts used (a hash of it); null before the first. */
  apiKeyTag: string | null;
  /** Until then the carrier's receipt is awaited before the report; null: not awaited. */
  receiptDeadline: number | null;
  /** The carrier's final word, or "none" when none came in time. */
  receipt: string | null;
  /** When the webhook was accepted. */
  createdAt: number;
  /** When an operator queued it again after it failed; null if never. */
  requeuedAt: number | null;
  /** Waiting because the gateway refused its API key. */
  held: boolean;
  /** An attempt got no clear answer (or a crash cut it off): its SMS may have left under the idempotency key. */
  unclear: boolean;
}

/** The columns a `Job` is read from, for `SELECT ${JOB_COLUMNS} FROM jobs …`. */
export const JOB_COLUMNS = `id, state, payload, outcome, error_code, error_message, gateway_message_id, attempts,
  idempotency_key, first_sent_at, sent_at, api_key_tag, receipt_deadline, receipt, created_at, requeued_at, held, unclear`;

export interface JobRow {
  id: number;
  state: JobState;
  payload: string;
  outcome: Outcome | null;
  error_code: FailureCode | null;
  error_message: string | null;
  gateway_message_id: string | null;
  attempts: number;
  idempotency_key: string | null;
  first_sent_at: number | null;
  sent_at: number | null;
  api_key_tag: string | null;
  receipt_deadline: number | null;
  receipt: string | null;
  created_at: number;
  requeued_at: number | null;
  held: number;
  unclear: number;
}

/** The one reading of a job's columns, for the queue and the message log alike. */
export function jobFromRow(row: JobRow): Job {
  return {
    id: row.id,
    state: row.state,
    message: JSON.parse(row.payload) as OutboundMessage,
    outcome: row.outcome,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    gatewayMessageId: row.gateway_message_id,
    attempts: row.attempts,
    idempotencyKey: row.idempotency_key,
    firstSentAt: row.first_sent_at,
    sentAt: row.sent_at,
    apiKeyTag: row.api_key_tag,
    receiptDeadline: row.receipt_deadline,
    receipt: row.receipt,
    createdAt: row.created_at,
    requeuedAt: row.requeued_at,
    held: row.held === 1,
    unclear: row.unclear === 1,
  };
}
