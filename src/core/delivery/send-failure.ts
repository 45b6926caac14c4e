import type { Job, Result, SendLater } from "../../db/jobs.ts";
import type { FailureCode } from "../../db/failures.ts";
import { GatewayError, errorMessage } from "../../errors.ts";
import type { SendRequest } from "../clients/gateway.ts";
import type { OutboundDeps } from "./outbound.ts";
import { delayMs, RESEND_WINDOW_MS, RETRY } from "../retry.ts";

/** When a send goes back to the queue, and how. */
type Later = { retryAt: number; reason: string } & SendLater;

/**
 * What becomes of a send that failed, decided in one place: its key held, the message
 * tried again (with its idempotency key, or a new one where Cast proved the old one sent
 * nothing), or failed.
 */
export function afterFailure(deps: OutboundDeps, job: Job, request: SendRequest, error: unknown): Result | Later {
  const { messageId, locationId } = job.message;
  if (!(error instanceof GatewayError)) {
    deps.log.warn(`message ${messageId} of location ${locationId} not sent: ${errorMessage(error)}`);
    return failed("send_failed", errorMessage(error));
  }
  // Cast says how long its budget is spent: no send on this key before then.
  if (error.failure === "rate_limited") deps.scheduler.slowDown(request.apiKey, error.retryAfterMs ?? 1000);
  // A failure Cast replays from its cache is old news of this key, not of the API key now.
  if (error.keySpent) return tryAgain(deps, job, error);
  // The key or the account, not this message: hold the key's messages until it works again.
  if ([401, 402, 403].includes(error.httpStatus ?? 0)) {
    deps.holds.hold(request.apiKey, error.httpStatus ?? 0, errorMessage(error), error.gatewayCode);
    // Cast checks the key and the address before its idempotency cache: this refusal says
    // nothing of an earlier attempt that got no answer. Its key stays, or a second SMS could go.
    return { retryAt: deps.now() + lookAgainMs(deps, job), reason: errorMessage(error), freshKey: !job.unclear, held: true };
  }
  if (error.failure === "rejected") {
    deps.log.warn(`message ${messageId} of location ${locationId} not sent: ${errorMessage(error)}`);
    return failed(`gateway_${error.failure}`, errorMessage(error));
  }
  return tryAgain(deps, job, error);
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

/**
 * A timeout, a 5xx, a dropped connection, a 429 or an outage: the same key again is safe,
 * as long as Cast remembers it; an outage is waited out up to SMS_HOLD_MAX. A failure Cast
 * replays from its cache sent nothing under the key: only a new one can send.
 */
function tryAgain(deps: OutboundDeps, job: Job, error: GatewayError): Result | Later {
  const { messageId, locationId } = job.message;
  const now = deps.now();
  const first = job.firstSentAt ?? now; // set by the claim
  // A 429 is waited out here, in the queue: no worker sleeps through Cast's Retry-After.
  const retryAt = now + Math.max(error.retryAfterMs ?? 0, delayMs(RETRY.send, job.attempts, deps.sendBackoffMs));
  // SMS_HOLD_MAX counts from the message's arrival: a new key must not start it anew.
  const waiting = retryAt - (job.requeuedAt ?? job.createdAt);
  if (waiting <= deps.holdMaxMs && retryAt - first <= RESEND_WINDOW_MS) {
    // Pacing (a 429) is no news for the operator; nor is every try of a long outage, nor
    // each message waiting for an outage that is logged when it starts and ends.
    const paced = error.failure === "rate_limited";
    const inOutage = !paced && (deps.outages?.waited("cast", messageId) ?? false);
    const log = job.attempts === 0 && !paced && !inOutage ? deps.log.warn : deps.log.debug;
    const key = error.keySpent ? "a new" : "the same";
    log(`message ${messageId} of location ${locationId}: ${errorMessage(error)}; trying again in ${retryAt - now} ms with ${key} idempotency key`);
    return { retryAt, reason: errorMessage(error), unclear: error.failure === "unknown" && !error.keySpent, freshKey: error.keySpent };
  }
  const why = `${errorMessage(error)}; gave up after ${job.attempts + 1} attempts in ${Math.round((now - first) / 1000)} s`;
  deps.log.warn(`message ${messageId} of location ${locationId} failed: ${why}`);
  return failed(`gateway_${error.failure}`, why);
}

/**
 * When a message on a held key looks again: at the key's next probe, or when its
 * SMS_HOLD_MAX is over, whichever comes first (0: it is over). An operator's retry
 * starts the wait anew.
 */
export function lookAgainMs(deps: OutboundDeps, job: Job): number {
  const left = deps.holdMaxMs - (deps.now() - (job.requeuedAt ?? job.createdAt));
  return Math.max(0, Math.min(deps.holds.lookAgainMs, left));
}

function failed(errorCode: FailureCode, errorMessage: string): Result {
  return { outcome: "failed", errorCode, errorMessage };
}
