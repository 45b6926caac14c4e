import { wallClock } from "../clock.ts";
import { errorMessage } from "../../errors.ts";
import type { LeaseStore } from "../../store/contract.ts";
import type { Logger } from "../log.ts";

/** A key's owner keeps its lease this long unrenewed: a stopped owner is replaced within it. */
export const KEY_OWNER_TTL_MS = 15_000;
/** The lease is renewed when asked after a third of its time; sooner, this server is still its owner. */
const RENEW_SHARE = 3;

export interface KeyOwnersOptions {
  leases: Pick<LeaseStore, "take" | "release">;
  /** This server's id (the presence's, servers.ts). */
  holder: string;
  log: Logger;
  ttlMs?: number;
}

export type KeyOwners = ReturnType<typeof createKeyOwners>;

/** The lease name of a key's control work. */
export const keyLease = (tag: string): string => `key:${tag}`;

/**
 * One server at a time per gateway key (CONTRACT 13; docs/operations.md): the key's
 * control work (its log's receipt reads, its hold probe, its balance read) is done by
 * the holder of lease `key:<tag>`, taken when it is free and renewed
 * while its holder has work for the key; another server takes it once it lapses. On
 * SQLite the one server always holds it. A store that cannot answer: not the owner now
 * (the work waits; the next ask tries again). Cast's unsubscribed list of a key is read
 * under a lease of its own, `unsubscribed:<tag>`, held for the read only, and stored for
 * every server's sends to check (delivery/unsubscribed.ts).
 */
export function createKeyOwners(options: KeyOwnersOptions) {
  const { leases, holder, log } = options;
  const ttlMs = options.ttlMs ?? KEY_OWNER_TTL_MS;
  const renewedAt = new Map<string, number>();
  return {
    /** Whether this server does the key's control work now: it holds (took, or renewed) the key's lease. */
    async owns(tag: string): Promise<boolean> {
      const asked = wallClock();
      if (asked - (renewedAt.get(tag) ?? -Infinity) < ttlMs / RENEW_SHARE) return true;
      try {
        const epoch = await leases.take(keyLease(tag), holder, ttlMs);
        if (epoch === undefined) renewedAt.delete(tag);
        else renewedAt.set(tag, asked);
        return epoch !== undefined;
      } catch (error) {
        renewedAt.delete(tag);
        log.warn(`key owners: cannot take the lease of key ${tag}: ${errorMessage(error)}; its control work waits`);
        return false;
      }
    },
    /** Whether this server held the key's lease at its last ask, within its time: no store asked. */
    ownsNow: (tag: string): boolean => wallClock() - (renewedAt.get(tag) ?? -Infinity) < ttlMs,
    /** This server has no work for the key now: its lease goes, so that another server needing it takes it at once. */
    async letGo(tag: string): Promise<void> {
      if (!renewedAt.delete(tag)) return;
      await leases.release(keyLease(tag), holder).catch(() => undefined);
    },
    /** A clean stop: the keys' leases let go, so other servers take them at once. */
    async releaseAll(): Promise<void> {
      const tags = [...renewedAt.keys()];
      renewedAt.clear();
      await Promise.all(tags.map((tag) => leases.release(keyLease(tag), holder).catch(() => undefined)));
    },
  };
}
