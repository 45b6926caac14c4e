import type { JobStore } from "../../store/contract.ts";
import type { Logger } from "../log.ts";
import { RESEND_WINDOW_MS } from "./outbound.ts";

/**
 * At start, the sends a crash (or kill -9) caught mid-way: with an idempotency key Cast
 * still remembers, they go again with it (Cast answers a repeat from its cache, so no
 * second SMS); without one, their fate is unknown and they are reported failed.
 */
export async function recoverInterrupted(jobs: Pick<JobStore, "recoverInterrupted">, log: Logger, now: number): Promise<void> {
  const { resumed, failed } = await jobs.recoverInterrupted(now, now - RESEND_WINDOW_MS);
  if (resumed > 0) {
    log.info(`${resumed} message(s) were being sent when bridge stopped; sending them again with the same idempotency key (the gateway sends each once)`);
  }
  // Each by name, as every failed message is (docs/operations.md, "Finding a message").
  for (const { messageId, locationId } of failed) {
    log.warn(`message ${messageId} of location ${locationId} failed: delivery unknown after restart (it was being sent when bridge stopped, without an idempotency key)`);
  }
}
