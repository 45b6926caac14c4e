import type { FailureCode } from "../store/types.ts";
import { AppError, CrmError, GatewayError, type ErrorCode, type GatewayFailure } from "../errors.ts";
import { delayMs, RETRY } from "./retry.ts";

/**
 * Whether to retry, hold or fail, decided in one place from what a client said happened
 * (`GatewayError.failure`, `CrmError.kind`: core/clients/gateway.ts, errors.ts) and the
 * job's attempts so far; never from an HTTP status. Pure: the callers do what it answers.
 * The back-offs themselves are in retry.ts.
 */

/** What the policy reads of a send's job. */
export interface SendAttempt {
  /** Attempts before this one. */
  attempts: number;
  createdAt: number;
  /** When an operator queued it again: its SMS_HOLD_MAX counts from then. */
  requeuedAt: number | null;
  /** The first attempt's claim. */
  firstSentAt: number | null;
  /** An earlier attempt got no clear answer: its SMS may have left under the idempotency key. */
  unclear: boolean;
}

export interface SendLimits {
  now: number;
  /** Longest a message waits (SMS_HOLD_MAX), from its arrival or an operator's retry. */
  holdMaxMs: number;
  /** How long a held key's messages wait before they look again (its next probe). */
  holdLookMs: number;
  /** First wait before a send is tried again (RETRY.send; tests shorten it). */
  sendBackoffMs?: number;
  /** The gateway driver's idempotency window (`GatewayDriver.idempotencyWindowMs`): no retry past it since the first attempt. */
  resendWindowMs: number;
}

/**
 * How a held key is found to work again. "balance": the balance call succeeds (a wrong,
 * revoked or expired key fails it too). "send": one waiting message is let through, for
 * refusals a working balance call does not cure (no credit, an address or channel refused).
 */
export type Probe = "balance" | "send";

/**
 * A failed send's fate. `retry`: at `at`, with the same idempotency key or a new one
 * (`freshKey`); `unclear`: this attempt may have sent it; `paced`: the wait is the pace the
 * gateway asked for (a 429), no news for the operator. `hold`: the key is held and the
 * message looks again at `at`. `fail`: with `code`; `gaveUp` when it was retried until its time ran out.
 */
export type SendVerdict =
  | { verdict: "retry"; at: number; freshKey: boolean; unclear: boolean; paced: boolean }
  | { verdict: "hold"; at: number; probe: Probe; freshKey: boolean }
  | { verdict: "fail"; code: FailureCode; gaveUp: boolean };

/** The kinds that hold the key, not fail the message, and how each hold is probed. */
const HOLDS: Partial<Record<GatewayFailure, Probe>> = { key_refused: "balance", out_of_credit: "send", account_held: "send" };

/** How a key held for `failure` is probed; undefined: no hold. */
export const probeOf = (failure: GatewayFailure): Probe | undefined => HOLDS[failure];

/** The answer to a send that failed with `error`. */
export function nextSend(error: unknown, job: SendAttempt, limits: SendLimits): SendVerdict {
  if (!(error instanceof GatewayError)) return { verdict: "fail", code: "send_failed", gaveUp: false };
  // A failure the gateway replays from its cache is old news of this key, not of the API key now.
  if (error.keySpent) return tryAgain(error, job, limits);
  const probe = HOLDS[error.failure];
  // The key or the account, not this message: its messages wait until it works again. The
  // gateway checks the key before its idempotency cache: this refusal says nothing of an
  // earlier attempt that got no answer. Its key stays then, or a second SMS could go.
  if (probe) return { verdict: "hold", at: limits.now + heldWaitMs(job, limits), probe, freshKey: !job.unclear };
  if (error.failure === "rejected" || error.failure === "not_found") return { verdict: "fail", code: "gateway_rejected", gaveUp: false };
  return tryAgain(error, job, limits);
}

/**
 * When a message on a held key looks again: at the key's next probe, or when its
 * SMS_HOLD_MAX is over, whichever comes first (0: it is over). An operator's retry
 * starts the wait anew.
 */
export function heldWaitMs(job: SendAttempt, limits: SendLimits): number {
  const left = limits.holdMaxMs - (limits.now - (job.requeuedAt ?? job.createdAt));
  return Math.max(0, Math.min(limits.holdLookMs, left));
}

/** A probe of a held key that failed with `error`: true when the gateway still refuses the key or its account. */
export function stillRefused(error: unknown): boolean {
  return error instanceof GatewayError && HOLDS[error.failure] !== undefined;
}

/**
 * A timeout, a 5xx, a dropped connection, a 429 or an outage: the same key again is safe,
 * as long as the gateway remembers it; an outage is waited out up to SMS_HOLD_MAX. A
 * failure replayed from the cache sent nothing under the key: only a new one can send.
 */
function tryAgain(error: GatewayError, job: SendAttempt, limits: SendLimits): SendVerdict {
  const { now } = limits;
  const first = job.firstSentAt ?? now;
  // A 429 is waited out in the queue: no worker sleeps through the gateway's Retry-After.
  const at = now + Math.max(error.retryAfterMs ?? 0, delayMs(RETRY.send, job.attempts, limits.sendBackoffMs));
  // SMS_HOLD_MAX counts from the message's arrival: a new key must not start it anew.
  if (at - (job.requeuedAt ?? job.createdAt) <= limits.holdMaxMs && at - first <= limits.resendWindowMs) {
    const unclear = error.failure === "unknown" && !error.keySpent;
    return { verdict: "retry", at, freshKey: error.keySpent, unclear, paced: error.failure === "rate_limited" };
  }
  return { verdict: "fail", code: givenUp(error.failure), gaveUp: true };
}

/** The code of a send given up on: a refusal of the key or account only gets here replayed, as a refusal. */
function givenUp(failure: GatewayFailure): FailureCode {
  if (failure === "unreachable" || failure === "unknown" || failure === "rate_limited") return `gateway_${failure}`;
  return "gateway_rejected";
}

/** A status report's fate: tried again in `inMs`, or given up. */
export type ReportVerdict = { verdict: "retry"; inMs: number } | { verdict: "fail" };

/** The answer to a status report that failed with `error` after `attempts` earlier tries. */
export function nextReport(error: unknown, attempts: number, limits: { maxTries?: number; backoffMs?: number }): ReportVerdict {
  if (!reportRetryable(error) || attempts + 1 >= (limits.maxTries ?? RETRY.report.tries)) return { verdict: "fail" };
  // A 429 (to the report or to its token's renewal) is waited out at least as long as asked.
  const asked = error instanceof AppError ? (error.retryAfterMs ?? 0) : 0;
  return { verdict: "retry", inMs: Math.max(asked, delayMs(RETRY.report, attempts, limits.backoffMs)) };
}

/** A report that met these may pass: a refresh, a store or the key may work at the next try. */
const REPORT_MAY_PASS = new Set<ErrorCode>(["REFRESH_FAILED", "STORE_FAILED", "ENCRYPTION_KEY"]);

/**
 * A status PUT may be retried: it is idempotent. A refused access token (renewed first),
 * a 429, an unclear answer (HighLevel's 403 in the first seconds after a webhook among
 * them), a timeout or a refused connection may pass later; another refusal will not.
 */
export function reportRetryable(error: unknown): boolean {
  if (error instanceof CrmError) return error.kind === "token_refused" || mayPassLater(error);
  // ENCRYPTION_KEY: a CLI command sealed a secret this server cannot read until it restarts with the key.
  // Any other (NO_TOKEN: the location is gone) will not get better.
  if (error instanceof AppError) return REPORT_MAY_PASS.has(error.code);
  return true; // a network failure or a timeout
}

/** The CRM refused the access token presented: a renewed one may pass. */
export function tokenRefused(error: unknown): boolean {
  return error instanceof CrmError && error.kind === "token_refused";
}

/** A CRM call that failed may pass when asked again later: no answer, a 429, an unclear answer; not a refusal. */
export function mayPassLater(error: unknown): boolean {
  return !(error instanceof CrmError) || error.kind === "unclear" || error.kind === "rate_limited";
}

/** The CRM refused the refresh token itself: only a reinstall brings it back. */
export function isDeadGrant(error: unknown): boolean {
  return error instanceof CrmError && error.kind === "grant_invalid";
}

/** The CRM refused a call as it is (not this token, not now: a location not the company's, say). */
export function refusedAsIs(error: unknown): boolean {
  return error instanceof CrmError && error.kind === "rejected";
}
