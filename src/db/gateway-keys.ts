import type { Db } from "./index.ts";
import { createSealer, type Sealer } from "./sealer.ts";

/** What the operator's view knows of one gateway API key (by its tag, never the key). */
export interface GatewayKey {
  keyTag: string;
  /** The key as it may be shown: its first 12 characters. */
  keyMasked: string;
  /** Held since then (the gateway refused the key); null while it works. */
  heldSince: number | null;
  heldStatus: number | null;
  heldReason: string | null;
  /** The last balance read, in credits; null when none was read or the read failed. */
  balance: number | null;
  balanceAt: number | null;
  balanceError: string | null;
}

export interface KeyHoldRecord {
  since: number;
  status: number;
  reason: string;
}

export type GatewayKeys = ReturnType<typeof createGatewayKeys>;
export type GatewayKeyRow = Row;

interface Row {
  key_tag: string;
  key_masked: string;
  held_since: number | null;
  held_status: number | null;
  held_reason: string | null;
  balance: number | null;
  balance_at: number | null;
  balance_error: string | null;
}

/**
 * Held keys and balances, written by `serve` as it learns them and read by `bridge
 * status` from another process. Holds live in the server's memory; this is their record.
 */
export function createGatewayKeys(db: Db, sealer: Sealer = createSealer(undefined)) {
  const held = db.prepare<[{ tag: string; masked: string } & KeyHoldRecord]>(`
    INSERT INTO gateway_keys (key_tag, key_masked, held_since, held_status, held_reason) VALUES (@tag, @masked, @since, @status, @reason)
    ON CONFLICT (key_tag) DO UPDATE SET key_masked = excluded.key_masked, held_since = coalesce(held_since, excluded.held_since),
      held_status = excluded.held_status, held_reason = excluded.held_reason`);
  const released = db.prepare<[string]>("UPDATE gateway_keys SET held_since = NULL, held_status = NULL, held_reason = NULL WHERE key_tag = ?");
  const clearHolds = db.prepare("UPDATE gateway_keys SET held_since = NULL, held_status = NULL, held_reason = NULL WHERE held_since IS NOT NULL");
  const balance = db.prepare<[{ tag: string; masked: string; at: number; credits: number | null; error: string | null }]>(`
    INSERT INTO gateway_keys (key_tag, key_masked, balance, balance_at, balance_error) VALUES (@tag, @masked, @credits, @at, @error)
    ON CONFLICT (key_tag) DO UPDATE SET key_masked = excluded.key_masked, balance = excluded.balance,
      balance_at = excluded.balance_at, balance_error = excluded.balance_error`);
  const all = db.prepare<[], Row>("SELECT * FROM gateway_keys ORDER BY key_masked");

  return {
    held(tag: string, masked: string, hold: KeyHoldRecord): void {
      held.run({ tag, masked, ...hold });
    },
    released(tag: string): void {
      released.run(tag);
    },
    /** A server starting anew has held nothing yet: the next send finds out again. */
    clearHolds(): void {
      clearHolds.run();
    },
    balance(tag: string, masked: string, at: number, read: { credits: number } | { error: string }): void {
      balance.run({ tag, masked, at, credits: "credits" in read ? read.credits : null, error: "error" in read ? read.error : null });
    },
    ...createKeptKeys(db, sealer),
    list(): GatewayKey[] {
      return all.all().map(gatewayKey);
    },
  };
}

/** The API keys sends went with, kept sealed while a receipt may still need them. */
function createKeptKeys(db: Db, sealer: Sealer) {
  // Written once per key: the sealed value differs at every seal, the key does not.
  const keep = db.prepare<[{ tag: string; masked: string; key: string }]>(`
    INSERT INTO gateway_keys (key_tag, key_masked, api_key) VALUES (@tag, @masked, @key)
    ON CONFLICT (key_tag) DO UPDATE SET api_key = excluded.api_key WHERE gateway_keys.api_key = ''`);
  const kept = db.prepare<[string], { api_key: string }>("SELECT api_key FROM gateway_keys WHERE key_tag = ? AND api_key <> ''");
  const forget = db.prepare(`
    UPDATE gateway_keys SET api_key = '' WHERE api_key <> '' AND key_tag NOT IN (
      SELECT api_key_tag FROM jobs WHERE state IN ('queued', 'sending', 'reporting') AND api_key_tag IS NOT NULL)`);
  const sealedIn = (tag: string) => ({ table: "gateway_keys", column: "api_key", row: tag });
  return {
    /** A send goes with this key (tagged `tag`): kept, sealed, until its receipt settles. */
    keep(tag: string, masked: string, apiKey: string): void {
      keep.run({ tag, masked, key: sealer.seal(apiKey, sealedIn(tag)) });
    },
    /** The key tagged `tag` that a send went with, while kept. */
    sentWith(tag: string): string | undefined {
      const row = kept.get(tag);
      return row && sealer.open(row.api_key, sealedIn(tag));
    },
    /** Forgets the keys no unsettled job was sent with: a replaced key is not kept longer than needed. */
    forgetUnused(): number {
      return forget.run().changes;
    },
  };
}

/** What the operator's view shows of one row (the PostgreSQL store reads the same row). */
export function gatewayKey(r: GatewayKeyRow): GatewayKey {
  return {
    keyTag: r.key_tag,
    keyMasked: r.key_masked,
    heldSince: r.held_since,
    heldStatus: r.held_status,
    heldReason: r.held_reason,
    balance: r.balance,
    balanceAt: r.balance_at,
    balanceError: r.balance_error,
  };
}
