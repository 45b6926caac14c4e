import type { Db } from "../db/index.ts";
import { checkSealed } from "../db/key-check.ts";
import { resealV1 } from "../db/reseal.ts";
import { createSealer, MEND_SEALED } from "../db/sealer.ts";
import { monthIn } from "../db/usage-month.ts";
import type { Store } from "./contract.ts";
import { openSqliteStore, type SqliteOptions } from "./sqlite.ts";

export type { Store } from "./contract.ts";

/** What the store is opened with: the configuration's key for the secrets at rest. */
export interface StoreConfig {
  encryptionKey: Buffer | undefined;
  /** The IANA zone whose months usage counts in (USAGE_TIME_ZONE); Asia/Manila when not given. */
  usageTimeZone?: string;
}

/** Where opening the store says what it found: secrets it cannot open, old seals renewed. */
export interface StoreLog {
  warn(message: string): void;
  info(message: string): void;
}

/**
 * The store from configuration: the one place core, serve and the CLI get it. The secrets
 * it cannot open are warned about (what needs them waits; the others work) and old seals
 * are renewed when a key is set.
 */
export function openStore(config: StoreConfig, db: Db, log?: StoreLog, options: SqliteOptions = {}): Store {
  const sealer = createSealer(config.encryptionKey);
  for (const unopenable of checkSealed(db, sealer)) {
    log?.warn(`${unopenable}: not used, and what needs it waits (the others work); ${MEND_SEALED}`);
  }
  const resealed = config.encryptionKey ? resealV1(db, sealer) : 0;
  if (resealed > 0) log?.info(`secrets of ${resealed} location(s) sealed again, now bound to their row and column`);
  return openSqliteStore(db, sealer, { monthOf: monthIn(config.usageTimeZone ?? "Asia/Manila"), ...options });
}
