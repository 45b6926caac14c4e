import { wallClock } from "../clock.ts";
import { errorMessage } from "../../errors.ts";
import type { GatewayKeys } from "../../store/contract.ts";
import type { Logger } from "../log.ts";

/** A hold as the database has it (holds.ts's Hold). */
export interface SharedHold {
  reason: string;
  since: number;
  status: number;
}

/** Every server's holds are read again at most this often (a send on a key another server holds waits at most this long to know). */
export const SHARED_HOLDS_MS = 1_000;

/** The holds of every server as the database has them, by key tag, and when that read started. */
export interface HeldEverywhere {
  held: ReadonlyMap<string, SharedHold>;
  readAt: number;
}

/**
 * The key holds of every server (gateway_keys' hold columns, the authority on a shared
 * database), read at most every `everyMs`, one read at a time. A read that fails keeps
 * the last one (logged), and is tried again after `everyMs`.
 */
export function createSharedHolds(keys: Pick<GatewayKeys, "list">, log: Logger, everyMs = SHARED_HOLDS_MS) {
  let last: HeldEverywhere = { held: new Map(), readAt: -Infinity };
  let reading: Promise<HeldEverywhere> | undefined;

  async function read(): Promise<HeldEverywhere> {
    const readAt = wallClock();
    try {
      const held = new Map<string, SharedHold>();
      for (const k of await keys.list()) {
        if (k.heldSince !== null) held.set(k.keyTag, { since: k.heldSince, status: k.heldStatus ?? 0, reason: k.heldReason ?? "" });
      }
      last = { held, readAt };
    } catch (error) {
      log.warn(`held keys: cannot read the other servers' holds: ${errorMessage(error)}`);
      last = { ...last, readAt };
    }
    return last;
  }

  return {
    /** Every server's holds, read within `everyMs`. */
    async fresh(): Promise<HeldEverywhere> {
      if (wallClock() - last.readAt < everyMs) return last;
      reading ??= read().finally(() => (reading = undefined));
      return reading;
    },
  };
}

export type SharedHolds = ReturnType<typeof createSharedHolds>;
