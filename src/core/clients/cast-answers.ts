import { wallClock } from "../clock.ts";
/**
 * How Cast.ph's answers read: a result, or a GatewayError of the kind each answer means
 * (core/clients/gateway.ts), following Cast's error table (docs/services/cast-api.md, "Error codes").
 * The one place Cast's HTTP statuses are read.
 */

import { GatewayError, type GatewayFailure } from "../../errors.ts";
import { retryAfterMs as parseRetryAfter } from "../retry.ts";
import type { DeliveryStatus, LogPage, SendResult } from "./gateway.ts";

/** An answer to one of Cast's GET calls, read. */
export interface CastAnswer {
  status: number;
  text: string;
  body: Body | undefined;
}

/** Cast's 403 codes about the account, not the key: a working balance call does not cure them. */
const ACCOUNT_CODES = new Set(["IP_NOT_WHITELISTED", "CHANNEL_NOT_ALLOWED"]);

/** What a refusal (a 4xx other than 429) says, by its status and Cast's `error_code`. */
export function refusalKind(status: number, gatewayCode: string | undefined): GatewayFailure {
  if (status === 402) return "out_of_credit";
  if (status === 403 && ACCOUNT_CODES.has(gatewayCode ?? "")) return "account_held";
  if (status === 401 || status === 403) return "key_refused";
  return "rejected";
}

/** Answers that, replayed from Cast's cache, show nothing was ever sent under the key. */
const SPENT_WHEN_REPLAYED = new Set([401, 402, 403, 429, 503]);

/**
 * An answer from Cast's idempotency cache. A refusal of the key or the account (401,
 * 402, 403), a 503 or a 429 kept there was the first request's answer under this key:
 * that request sent nothing, and every repeat only gets the same answer. Anything else
 * (a 200, a 400 about the message, a 500 that may have followed a send) stands.
 */
export function replayed(error: unknown, status: number): unknown {
  if (!(error instanceof GatewayError) || !SPENT_WHEN_REPLAYED.has(status)) return error;
  const message = `gateway replayed its kept answer (${status}) to this idempotency key: nothing was sent with it; trying a new key`;
  const { retryAfterMs, gatewayCode } = error;
  return new GatewayError(error.failure, message, { httpStatus: status, keySpent: true, retryAfterMs, gatewayCode, cause: error });
}

/** A 429, with how long Cast asked us to wait. */
export function rateLimited(retryAfter: string | null): GatewayError {
  const retryAfterMs = parseRetryAfter(retryAfter, wallClock());
  return new GatewayError("rate_limited", "gateway rate limit (429)", { httpStatus: 429, retryAfterMs });
}

/** Turns the gateway's answer to a send into a result or a classified GatewayError. */
export function readAnswer(status: number, text: string, retryAfter: string | null): SendResult {
  if (status === 429) throw rateLimited(retryAfter);
  const body = parseBody(text);
  if (status >= 500) {
    throw new GatewayError("unknown", `gateway answered ${status}${detail(body, text)}; delivery unknown`, { httpStatus: status });
  }
  // Any 2xx may mean the SMS went (Cast.ph answers 200, but a 201/202 is no refusal):
  // only an explicit success:false or a non-2xx says it did not.
  const ok = status >= 200 && status < 300;
  if (!ok || body?.success === false) {
    const gatewayCode = errorCode(body);
    const kind = ok ? "rejected" : refusalKind(status, gatewayCode);
    throw new GatewayError(kind, `gateway rejected the message (${status})${detail(body, text)}`, { httpStatus: status, gatewayCode });
  }
  if (body?.success !== true || typeof body.message_id !== "string") {
    throw new GatewayError("unknown", `gateway answered ${status} without a message_id; delivery unknown`, { httpStatus: status });
  }
  // A sandbox key (cast_test_…) is answered like a send, but nothing goes to a carrier.
  if (body.sandbox === true) {
    throw new GatewayError("rejected", `the SMS API key is a sandbox key: the gateway sent nothing (id ${body.message_id}); set a live key`, { httpStatus: status });
  }
  // Parts are credits spent, stored and summed: only a whole count of at least one is taken.
  const parts = typeof body.parts === "number" && Number.isSafeInteger(body.parts) && body.parts >= 1 ? body.parts : 1;
  return { messageId: body.message_id, parts };
}

/**
 * A GET Cast did not answer as asked. A 2xx without what was asked for, or a 5xx, is no
 * clear answer ("unknown"); a 404 to the status call: Cast has no record of the message.
 */
export function refused(what: string, res: CastAnswer, lookedUp = false): GatewayError {
  const gatewayCode = errorCode(res.body);
  const unclear = res.status >= 500 || (res.status >= 200 && res.status < 300);
  const kind = unclear ? "unknown" : lookedUp && res.status === 404 ? "not_found" : refusalKind(res.status, gatewayCode);
  return new GatewayError(kind, `gateway ${what} answered ${res.status}${detail(res.body, res.text)}`, { httpStatus: res.status, gatewayCode });
}

/**
 * A status as the status call writes it; undefined when it has none. A final carrier code
 * decides over a `status` that is not final: the carrier's DELETED or UNKNOWN is the end of
 * the message whatever word Cast puts beside it.
 */
export function readStatus(body: unknown): DeliveryStatus | undefined {
  const b = body as { status?: unknown; dlr_status?: unknown; error_message?: unknown } | undefined;
  if (typeof b?.status !== "string") return undefined;
  const dlrStatus = typeof b.dlr_status === "string" ? b.dlr_status : "";
  const byCarrier = b.status === "failed" ? undefined : FINAL_OF_DLR[dlrStatus];
  return { status: byCarrier ?? b.status, dlrStatus, errorMessage: typeof b.error_message === "string" ? b.error_message : "" };
}

/**
 * A page of Cast's log: each entry's status and time by the send's message id, and how far
 * back the page reached. Neither `count` (its example answers count 1 with one entry) nor
 * a page shorter than asked says the log ends: Cast may serve fewer than the limit.
 */
export function readLogPage(logs: unknown[]): LogPage {
  const statuses = new Map<string, DeliveryStatus>();
  const sentAt = new Map<string, number>();
  let oldestAt: number | undefined;
  for (const entry of logs as Record<string, unknown>[]) {
    const status = entry && readLogEntry(entry);
    // `id` is Cast's row number; the send's message id is `smpp_message_id`.
    const id = typeof entry?.smpp_message_id === "string" ? entry.smpp_message_id : undefined;
    if (id && status) statuses.set(id, status);
    const at = typeof entry?.created_at === "string" ? Date.parse(entry.created_at) : Number.NaN;
    if (!Number.isFinite(at)) continue;
    oldestAt = Math.min(oldestAt ?? at, at);
    if (id) sentAt.set(id, at);
  }
  return { statuses, sentAt, entries: logs.length, oldestAt };
}

/**
 * A logs entry in the status call's terms. Its `status` is only the submission (`sent`
 * or `failed`); the carrier's receipt is `dlr_status`, absent until it came.
 */
function readLogEntry(entry: Record<string, unknown>): DeliveryStatus | undefined {
  if (entry.status !== "sent" && entry.status !== "failed") return undefined;
  const dlrStatus = typeof entry.dlr_status === "string" ? entry.dlr_status : "";
  const errorMessage = typeof entry.error_message === "string" ? entry.error_message : "";
  if (entry.status === "failed") return { status: "failed", dlrStatus, errorMessage };
  return { status: FINAL_OF_DLR[dlrStatus] ?? (dlrStatus ? "pending" : "sent"), dlrStatus, errorMessage };
}

/**
 * The status call's word for each final carrier code (SMPP's message states): DELETED,
 * like REJECTD, UNDELIV and EXPIRED, is the carrier's end without delivery; UNKNOWN is its
 * end without a word on delivery ("unknown": delivery unknown). Any other code (ACCEPTD,
 * ENROUTE) is not final.
 */
const FINAL_OF_DLR: Record<string, string> = {
  DELIVRD: "delivered",
  UNDELIV: "undelivered",
  REJECTD: "undelivered",
  EXPIRED: "undelivered",
  DELETED: "undelivered",
  UNKNOWN: "unknown",
};

export interface Body {
  success?: unknown;
  message_id?: unknown;
  sandbox?: unknown;
  parts?: unknown;
  error?: unknown;
  error_code?: unknown;
}

export function parseBody(text: string): Body | undefined {
  try {
    const json: unknown = JSON.parse(text);
    return json && typeof json === "object" ? (json as Body) : undefined;
  } catch {
    return undefined;
  }
}

function detail(body: Body | undefined, text: string): string {
  const said = typeof body?.error === "string" ? body.error : text.slice(0, 200);
  return said ? `: ${said}` : "";
}

function errorCode(body: Body | undefined): string | undefined {
  return typeof body?.error_code === "string" ? body.error_code : undefined;
}
