import type { Job } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import type { ReportedStatus } from "../clients/crm.ts";
import { nextReport, tokenRefused } from "../retry-policy.ts";
import type { ReportDeps } from "./outbound-deps.ts";
import { TEST_MESSAGE_PREFIX } from "../ids.ts";

/**
 * Reports a job's outcome to the CRM; a number: the ms until it may look again (its token
 * is being renewed). A report that fails is tried again as the retry policy answers
 * (core/retry-policy.ts), scheduled in the database so that a waiting report holds no worker.
 */
export async function report(deps: ReportDeps, job: Job): Promise<number | void> {
  const { messageId, locationId } = job.message;
  const status: ReportedStatus =
    job.outcome === "delivered"
      ? { status: "delivered" }
      : { status: "failed", error: { code: job.errorCode ?? "send_failed", type: "saas", message: job.errorMessage ?? "not sent" } };
  if (messageId.startsWith(TEST_MESSAGE_PREFIX)) {
    if (!(await taken(deps, job))) return;
    // The settings page's test SMS: HighLevel knows no such message, so there is nothing to tell it.
    await deps.jobs.reported(job.id, "not reported: a test message", deps.now());
    deps.metrics?.finished(job);
    deps.log.info(`message ${messageId}: ${status.status} (a test message, not reported to HighLevel)`);
    return;
  }
  let accessToken: string | undefined;
  try {
    const valid = await deps.tokenService.forJob(locationId);
    // Renewed by another job right now, or HighLevel asked to wait: waited in the queue.
    if ("waitMs" in valid) return valid.waitMs;
    ({ accessToken } = valid);
    if (!(await taken(deps, job))) return;
    await deps.crm.updateMessageStatus(accessToken, messageId, status);
    await deps.jobs.reported(job.id, status.status, deps.now());
    deps.metrics?.finished(job);
    deps.log.debug(`message ${messageId}: reported ${status.status}`);
  } catch (error) {
    // The CRM no longer takes this access token (revoked or rotated elsewhere): a fresh
    // one is worth a try. HighLevel's "too early" is not a token problem.
    if (accessToken && tokenRefused(error)) {
      await deps.tokenService.rejected(locationId, accessToken).catch(() => undefined);
    }
    await retryReport(deps, job, error);
  }
}

/** A report that went this long without its outcome stored is due again (its server stopped mid-way). */
const REPORT_TAKE_MS = 60_000;

/**
 * Servers sharing the database: whether this one takes the job's report (its row due, and
 * put off while it goes); false: another server took it. One server alone: always.
 */
async function taken(deps: ReportDeps, job: Job): Promise<boolean> {
  if (!deps.takeReports) return true;
  if (await deps.jobs.takeReport(job.id, deps.now(), deps.now() + REPORT_TAKE_MS)) return true;
  deps.log.debug(`message ${job.message.messageId}: its report is another server's`);
  return false;
}

/** Schedules the next report in the database, or gives the report up. */
async function retryReport(deps: ReportDeps, job: Job, error: unknown): Promise<void> {
  const { messageId, locationId } = job.message;
  const next = nextReport(error, job.attempts, { maxTries: deps.reportAttempts, backoffMs: deps.reportBackoffMs });
  if (next.verdict === "fail") {
    await deps.jobs.giveUp(job.id, deps.now(), errorMessage(error));
    deps.metrics?.finished(job);
    deps.log.error(`message ${messageId} of location ${locationId}: status not reported: ${errorMessage(error)}`);
    return;
  }
  deps.outages?.waited("crm", messageId);
  await deps.jobs.retryLater(job.id, deps.now() + next.inMs, errorMessage(error), deps.now());
  deps.log.debug(`message ${messageId}: status report failed (${errorMessage(error)}), retry ${job.attempts + 1} in ${next.inMs} ms`);
}
