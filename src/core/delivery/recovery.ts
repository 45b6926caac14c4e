import type { JobStore } from "../../store/contract.ts";
import type { Logger } from "../log.ts";

/**
 * At start, the sends a crash (or kill -9) caught mid-way: with an idempotency key the
 * gateway still remembers (first used within `windowMs`, the drivers' shortest idempotency
 * window: clients/registry.ts), they go again with it (the gateway answers a repeat from
 * its memory, so no second SMS); without one, their fate is unknown and they are reported
 * failed. `windowMs` 0: none is sent again.
 */
export async function recoverInterrupted(jobs: Pick<JobStore, "recoverInterrupted">, log: Logger, now: number, windowMs: number): Promise<void> {
  const { resumed, failed } = await jobs.recoverInterrupted(now, now - windowMs);
  if (resumed > 0) {
    log.info(`${resumed} message(s) were being sent when bridge stopped; sending them again with the same idempotency key (the gateway sends each once)`);
  }
  // Each by name, as every failed message is (docs/operations.md, "Finding a message").
  for (const { messageId, locationId } of failed) {
    log.warn(`message ${messageId} of location ${locationId} failed: delivery unknown after restart (it was being sent when bridge stopped, without an idempotency key)`);
  }
}
