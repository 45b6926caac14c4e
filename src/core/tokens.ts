import pRetry, { AbortError } from "p-retry";
import type { TokenRecord, TokenStore } from "../db/tokens.ts";
import type { CrmClient } from "./clients/crm.ts";
import { AppError, CrmError, errorMessage, noToken } from "./errors.ts";
import type { Logger } from "./log.ts";
import { sleep } from "./retry.ts";

/** Refresh when less than this remains before expires_at (spec 3.2). */
export const REFRESH_MARGIN_MS = 5 * 60_000;

export function needsRefresh(expiresAt: number, now: number): boolean {
  return expiresAt - now < REFRESH_MARGIN_MS;
}

export interface TokenServiceDeps {
  tokens: TokenStore;
  crm: CrmClient;
  now: () => number;
  log: Logger;
  /** How long a refresh lease is held at most (a crashed holder frees it then). */
  leaseMs?: number;
  /** How long to wait for another process's refresh before giving up. */
  waitMs?: number;
  /** First wait before storing a refreshed pair again; doubles each time. */
  storeRetryMs?: number;
}

/** At most one refresh a 401 forces, per location, within this. */
const RENEW_401_MS = 10 * 60_000;

export type TokenService = ReturnType<typeof createTokenService>;

/**
 * Valid access tokens for locations. Refresh tokens are single-use, so a refresh is
 * single-flight twice over: one promise per location inside this process, and a
 * lease row in SQLite between processes (the server and `bridge token refresh`).
 */
export function createTokenService(deps: TokenServiceDeps) {
  const { tokens, crm, now, log } = deps;
  const leaseMs = deps.leaseMs ?? 60_000;
  const waitMs = deps.waitMs ?? 45_000;
  const storeRetryMs = deps.storeRetryMs ?? 250;
  const inflight = new Map<string, Promise<TokenRecord>>();
  // Per location, when a 401 last made us fetch a new token. If the CRM refuses that
  // one too, the token is not the problem (HighLevel also answers 401 for a missing scope).
  const renewedAfter401 = new Map<string, number>();

  function refresh(locationId: string, force = false): Promise<TokenRecord> {
    const running = inflight.get(locationId);
    if (running) return running;
    const started = refreshOnce(locationId, force).finally(() => inflight.delete(locationId));
    inflight.set(locationId, started);
    return started;
  }

  async function refreshOnce(locationId: string, force: boolean): Promise<TokenRecord> {
    const giveUpAt = Date.now() + waitMs;
    const first = tokens.get(locationId);
    for (let record = first; ; record = tokens.get(locationId)) {
      if (!record) throw noToken(locationId);
      // Someone else refreshed while we waited: their pair is ours to use.
      const rotated = record.refreshToken !== first?.refreshToken;
      if (rotated || (!force && !needsRefresh(record.expiresAt, now()))) return record;
      // Refused before: only an operator's --force presents it again (the refusal may
      // have been our own client credentials', since mended).
      if (record.refreshError && !force) throw new AppError("REFRESH_FAILED", `refresh token failed: ${record.refreshError}`);
      // Lease times are wall-clock: they coordinate real processes, not business time.
      if (tokens.tryLease(locationId, record.serial, Date.now(), Date.now() + leaseMs)) {
        return refreshHoldingLease(record);
      }
      if (Date.now() > giveUpAt) {
        throw new AppError("REFRESH_FAILED", "refresh token failed: another process is still refreshing this token");
      }
      await sleep(100);
    }
  }

  async function refreshHoldingLease(record: TokenRecord): Promise<TokenRecord> {
    const { locationId } = record;
    let fresh;
    try {
      fresh = await crm.refreshToken(record.refreshToken);
    } catch (error) {
      const latest = tokens.get(locationId);
      // invalid_grant because another process rotated the token first: use the newer pair.
      if (latest && latest.refreshToken !== record.refreshToken) return latest;
      tokens.releaseLease(locationId, record.serial, isDeadGrant(error) ? deadGrantNote(error) : "");
      log.error(`token refresh failed for location ${locationId}: ${errorMessage(error)}`);
      throw new AppError("REFRESH_FAILED", `refresh token failed: ${errorMessage(error)}`, { cause: error });
    }
    // The CRM has spent the old refresh token: the new pair exists only here until it
    // is stored, so a refused write is tried again before the location is lost to it.
    const store = () => {
      const at = now();
      if (!tokens.updateTokens(locationId, fresh.accessToken, fresh.refreshToken, at + fresh.expiresIn * 1000, at)) {
        // Nothing to retry: gone is gone.
        throw new AbortError(new AppError("STORE_FAILED", "failed to update token in store: the location was removed meanwhile"));
      }
    };
    try {
      await pRetry(store, {
        retries: 4, // storeRetryMs, doubling: ~4 s in all by default
        minTimeout: storeRetryMs,
        onFailedAttempt: ({ error, retriesLeft }) => {
          if (retriesLeft > 0) log.error(`location ${locationId}: the refreshed token could not be stored (${errorMessage(error)}); trying again`);
        },
      });
    } catch (error) {
      tokens.releaseLease(locationId, record.serial);
      if (error instanceof AppError) throw error;
      throw new AppError("STORE_FAILED", `failed to update token in store: ${errorMessage(error)}`, { cause: error });
    }
    log.info(`refreshed the access token of location ${locationId}`);
    const stored = tokens.get(locationId);
    if (!stored) throw noToken(locationId);
    return stored;
  }

  return {
    /** The location's record with an access token good for at least 5 more minutes. */
    async validToken(locationId: string): Promise<TokenRecord> {
      const record = tokens.get(locationId);
      if (!record) throw noToken(locationId);
      if (!needsRefresh(record.expiresAt, now())) return record;
      return refresh(locationId);
    },
    /** Refreshes now if needed, or always with `force` (the CLI's `token refresh --force`), even a token refused before. */
    refresh,
    /**
     * The CRM answered 401 to `accessToken`: fetch a new one. Not when the location
     * already holds a newer one, nor more than once in RENEW_401_MS per location:
     * every refresh spends the single-use refresh token.
     */
    async rejected(locationId: string, accessToken: string): Promise<void> {
      const current = tokens.get(locationId);
      if (!current || current.accessToken !== accessToken || current.refreshError) return;
      if (now() - (renewedAfter401.get(locationId) ?? -Infinity) < RENEW_401_MS) return;
      renewedAfter401.set(locationId, now());
      await refresh(locationId, true);
    },
  };
}

/** The CRM refused the refresh token itself: only a reinstall brings the location back. */
function isDeadGrant(error: unknown): boolean {
  return error instanceof CrmError && (error.httpStatus === 400 || error.httpStatus === 401) && /invalid_grant/i.test(error.body ?? "");
}

function deadGrantNote(error: unknown): string {
  return `the CRM refused the refresh token (${errorMessage(error)}); reinstall the app for this location`;
}
