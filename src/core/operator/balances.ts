import type { GatewayKeys } from "../../store/contract.ts";
import type { SmsGateway } from "../clients/gateway.ts";
import { errorMessage } from "../../errors.ts";
import { keyTag } from "../key-tag.ts";
import type { Logger } from "../log.ts";
import { maskSecret } from "../mask.ts";
import { sleep } from "../retry.ts";
import { isLow } from "./status.ts";

export interface BalancesOptions {
  sms: Pick<SmsGateway, "balance">;
  keys: GatewayKeys;
  log: Logger;
  now: () => number;
  /** Below this many credits, a warning (LOW_BALANCE_CREDITS); 0: never. */
  lowCredits: number;
  /** A balance older than this is read again. */
  freshMs?: number;
  /** A key's low balance is warned about at most this often. */
  warnEveryMs?: number;
  /**
   * 0 when a balance read of the key may go now (its request of Cast's budget taken); else the
   * ms to wait (Scheduler.tryLowest): no message waits on a balance, so it goes last.
   */
  turn?: (apiKey: string) => number;
  /** Servers sharing a database: whether this one does the key's control work now (key-owners.ts); default: always. */
  owns?: (tag: string) => Promise<boolean>;
}

export type Balances = ReturnType<typeof createBalances>;

/**
 * Each gateway key's balance (Cast's `GET /api/v1/account/balance`), recorded for
 * `bridge status` and warned about below LOW_BALANCE_CREDITS, at most hourly a key, so
 * an operator tops up before Cast starts refusing (402) and messages wait.
 */
export function createBalances(options: BalancesOptions) {
  const { sms, keys, log, now, lowCredits } = options;
  const freshMs = options.freshMs ?? 5 * 60_000;
  const warnEveryMs = options.warnEveryMs ?? 60 * 60_000;
  const warnedAt = new Map<string, number>();
  let timer: ReturnType<typeof setInterval> | undefined;

  async function read(apiKey: string): Promise<void> {
    const tag = keyTag(apiKey);
    const masked = maskSecret(apiKey);
    let credits: number;
    try {
      for (let wait = options.turn?.(apiKey) ?? 0; wait > 0; wait = options.turn?.(apiKey) ?? 0) await sleep(wait);
      credits = await sms.balance(apiKey);
    } catch (error) {
      await keys.balance(tag, masked, now(), { error: errorMessage(error) });
      return;
    }
    await keys.balance(tag, masked, now(), { credits });
    if (isLow(credits, lowCredits) && now() - (warnedAt.get(tag) ?? -Infinity) >= warnEveryMs) {
      warnedAt.set(tag, now());
      log.warn(`SMS gateway key ${masked} has ${credits} credits left, below LOW_BALANCE_CREDITS (${lowCredits}): top up before sending stops`);
    }
  }

  /**
   * Reads the balance of each key whose recorded one is older than `freshMs` (or missing),
   * or was read before its key was held: a key held for a 402 must not show the credits it
   * had before Cast refused it. `ownedOnly` (serve's reads): only the keys this server owns.
   */
  async function refresh(apiKeys: string[], ownedOnly = false): Promise<void> {
    const recorded = new Map((await keys.list()).map((k) => [k.keyTag, k]));
    const stale = [...new Set(apiKeys)].filter((key) => {
      const known = recorded.get(keyTag(key));
      const readAt = known?.balanceAt ?? 0;
      return now() - readAt >= freshMs || (known?.heldSince != null && known.heldSince >= readAt);
    });
    // Serve's reads: a key another server owns is read by it, recorded for every server to see.
    const mine = await Promise.all(stale.map(async (key) => !ownedOnly || ((await options.owns?.(keyTag(key))) ?? true)));
    await Promise.all(stale.filter((_, i) => mine[i]).map(read));
  }

  return {
    refresh,
    /** Serve: read the keys in use now and every `freshMs`. */
    start(apiKeys: () => Promise<string[]>): void {
      const tick = () => void apiKeys().then((keys) => refresh(keys, true)).catch((error: unknown) => log.warn(`balances: ${errorMessage(error)}`));
      tick();
      timer = setInterval(tick, freshMs);
      timer.unref();
    },
    stop(): void {
      clearInterval(timer);
    },
  };
}
