import type { JobStore } from "../../store/contract.ts";
import type { Logger } from "../log.ts";

/**
 * At start, the sends a crash (or kill -9) caught mid-way: with an idempotency key the
 * gateway still remembers (first used within its gateway's idempotency window, `windows`
 * by gateway kind: `resendWindows` in clients/registry.ts), they go again with it (the
 * gateway answers a repeat from its memory, so no second SMS); without one, their fate is
 * unknown and they are reported failed. A window of 0, or none: none of the kind is sent again.
 */
export async function recoverInterrupted(
  jobs: Pick<JobStore, "recoverInterrupted">,
  log: Logger,
  now: number,
  windows: Readonly<Record<string, number>>,
  servers?: readonly string[],
): Promise<void> {
  const since = Object.fromEntries(Object.entries(windows).filter(([, windowMs]) => windowMs > 0).map(([kind, windowMs]) => [kind, now - windowMs]));
  const { resumed, failed } = await jobs.recoverInterrupted(now, since, servers);
  const who = servers ? `server ${servers.join(", ")}` : "bridge";
  if (resumed > 0) {
    log.info(`${resumed} message(s) were being sent when ${who} stopped; sending them again with the same idempotency key (the gateway sends each once)`);
  }
  // Each by name, as every failed message is (docs/operations.md, "Finding a message").
  for (const { messageId, locationId } of failed) {
    log.warn(`message ${messageId} of location ${locationId} failed: delivery unknown after restart (it was being sent when bridge stopped, without an idempotency key)`);
  }
}
