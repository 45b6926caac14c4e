import pRetry from "p-retry";
import type { Job, Result } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import { pRetryOptions, RETRY } from "../retry.ts";
import type { StoreDeps } from "./outbound-deps.ts";

/**
 * After the gateway call the result exists only in memory, and nothing else will pick
 * up a job left "sending" while this process runs. So a refused write (a locked or
 * full disk) is tried again until it is stored: 100 ms, doubling up to 30 s. If the
 * process stops first, the next start sends it again with its key (Cast replays the answer).
 */
export async function storeResult(deps: StoreDeps, job: Job, result: Result, receipt?: { at: number; deadline: number }, unclaimed = false): Promise<void> {
  const what = `message ${job.message.messageId}: its result (${result.outcome}${result.gatewayMessageId ? `, gateway id ${result.gatewayMessageId}` : ""})`;
  await storeUntilDone(deps, what, () => deps.jobs.recordResult(job.id, result, deps.now(), receipt, unclaimed));
}

/** Runs `write`, trying again while the store refuses it. */
export async function storeUntilDone(deps: StoreDeps, what: string, write: () => Promise<void>): Promise<void> {
  try {
    await pRetry(write, {
      ...pRetryOptions(RETRY.storeResult, deps.storeRetryMs),
      onFailedAttempt: ({ error, retryDelay }) => {
        // No delay: p-retry gives up (a TypeError, such as a closed database).
        if (retryDelay > 0) deps.log.error(`${what} could not be stored: ${errorMessage(error)}; trying again in ${retryDelay} ms`);
      },
    });
  } catch (error) {
    throw new Error(`${what} could not be stored (${errorMessage(error)}); after a restart the send is tried again with its idempotency key`, { cause: error });
  }
}
