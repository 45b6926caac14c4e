import type { Job, Result, SendLater } from "../../store/types.ts";
import type { FailureCode } from "../../store/types.ts";
import { GatewayError, errorMessage } from "../../errors.ts";
import type { SendRequest } from "../clients/gateway.ts";
import type { FailureDeps } from "./outbound-deps.ts";
import { heldWaitMs, nextSend, type SendLimits } from "../retry-policy.ts";

/** When a send goes back to the queue, and how. */
type Later = { retryAt: number; reason: string } & SendLater;

/**
 * What becomes of a send that failed, as the retry policy answers (core/retry-policy.ts):
 * its key held, the message tried again (with its idempotency key, or a new one where
 * the gateway proved the old one sent nothing), or failed. Here it is done and told.
 */
export function afterFailure(deps: FailureDeps, job: Job, request: SendRequest, error: unknown): Result | Later {
  const { messageId, locationId } = job.message;
  const reason = errorMessage(error);
  const now = limits(deps, request.apiKey);
  const next = nextSend(error, job, now);
  if (error instanceof GatewayError) {
    // The gateway says how long its budget is spent: no send on this key before then.
    if (error.failure === "rate_limited") deps.sendBudget.slowDown(request.apiKey, error.retryAfterMs ?? 1000);
    if (next.verdict === "hold") deps.holds.hold(request.apiKey, next.probe, error);
  }
  if (next.verdict === "hold") return { retryAt: next.at, reason, freshKey: next.freshKey, held: true };
  if (next.verdict === "retry") {
    // Pacing (a 429) is no news for the operator; nor is every try of a long outage, nor
    // each message waiting for an outage that is logged when it starts and ends.
    const inOutage = !next.paced && (deps.outages?.waited("cast", messageId) ?? false);
    const log = job.attempts === 0 && !next.paced && !inOutage ? deps.log.warn : deps.log.debug;
    const key = next.freshKey ? "a new" : "the same";
    log(`message ${messageId} of location ${locationId}: ${reason}; trying again in ${next.at - now.now} ms with ${key} idempotency key`);
    return { retryAt: next.at, reason, unclear: next.unclear, freshKey: next.freshKey };
  }
  if (next.gaveUp) {
    const first = job.firstSentAt ?? now.now;
    const why = `${reason}; gave up after ${job.attempts + 1} attempts in ${Math.round((now.now - first) / 1000)} s`;
    deps.log.warn(`message ${messageId} of location ${locationId} failed: ${why}`);
    return failed(next.code, why);
  }
  deps.log.warn(`message ${messageId} of location ${locationId} not sent: ${reason}`);
  return failed(next.code, reason);
}

/**
 * A message on a held key waits (the ms to wait), until it has waited SMS_HOLD_MAX since
 * it was accepted: then it fails with the gateway's reason. Undefined: the key is not held.
 */
export function heldTooLong(deps: FailureDeps, job: Job, apiKey: string): { waitMs: number; reason: string } | Result | undefined {
  const hold = deps.holds.check(apiKey);
  if (!hold) return undefined;
  const waitMs = heldWaitMs(job, limits(deps, apiKey));
  if (waitMs > 0) return { waitMs, reason: hold.reason };
  // After an earlier attempt that may have sent it, "delivery unknown" (unlessMaybeSent).
  return failed("gateway_key_refused", `the SMS gateway refused this location's API key for longer than SMS_HOLD_MAX: ${hold.reason}`);
}

/**
 * A message that ends failed after an attempt that got no clear answer (`job.unclear`:
 * its SMS may have left under the idempotency key) is "delivery unknown", whatever ended
 * it (a refusal before the next send, a give-up on 429s or an unreachable gateway): none
 * of these says anything about that attempt. The one place this is decided; a wait
 * (`retryAt`) and any other ending pass as they are.
 */
export function unlessMaybeSent<T extends Result | Later>(job: Job, ending: T): T {
  if (!("outcome" in ending) || ending.outcome !== "failed" || !job.unclear || ending.errorCode === "delivery_unknown") return ending;
  const said = ending.errorMessage ?? "not sent";
  // An ending that already says so (the last answer was itself unclear) keeps its words.
  if (said.endsWith("delivery unknown") || said.includes("; delivery unknown;")) return { ...ending, errorCode: "delivery_unknown" };
  return { ...ending, errorCode: "delivery_unknown", errorMessage: `${said}; an earlier attempt got no clear answer, delivery unknown` };
}

/** The retry policy's limits for a send with `apiKey`: its driver's idempotency window among them. */
function limits(deps: FailureDeps, apiKey: string): SendLimits {
  const resendWindowMs = deps.sms.driverOf(apiKey).idempotencyWindowMs;
  return { now: deps.now(), holdMaxMs: deps.holdMaxMs, holdLookMs: deps.holds.lookAgainMs, sendBackoffMs: deps.sendBackoffMs, resendWindowMs };
}

function failed(errorCode: FailureCode, errorMessage: string): Result {
  return { outcome: "failed", errorCode, errorMessage };
}
