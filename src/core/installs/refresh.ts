import { wallClock } from "../clock.ts";
import pRetry, { AbortError } from "p-retry";
import type { RateLimitMode, TokenResponse } from "../clients/crm.ts";
import { AppError, errorMessage } from "../../errors.ts";
import type { Logger } from "../log.ts";
import { isDeadGrant } from "../retry-policy.ts";
import { pRetryOptions, RETRY, sleep } from "../retry.ts";

/** Refresh when less than this remains before expires_at (spec 3.2). */
export const REFRESH_MARGIN_MS = 5 * 60_000;

export function needsRefresh(expiresAt: number, now: number): boolean {
  return expiresAt - now < REFRESH_MARGIN_MS;
}

/** What a refresh needs of a stored token, a location's or a company's. */
export interface LeasedToken {
  refreshToken: string;
  expiresAt: number;
  refreshError: string;
  serial: number;
}

/** A table of tokens that can be leased for a refresh (db/tokens.ts, db/companies.ts). */
export interface LeasedStore<R extends LeasedToken> {
  get(id: string): Promise<R | undefined>;
  tryLease(id: string, serial: number, now: number, until: number): Promise<boolean>;
  releaseLease(id: string, serial: number, refreshError?: string): Promise<void>;
  updateTokens(id: string, accessToken: string, refreshToken: string, expiresAt: number, now: number): Promise<boolean>;
}

export interface RefresherDeps<R extends LeasedToken> {
  store: LeasedStore<R>;
  /** A new token for the record: its refresh token spent at the CRM, or another way; a 429 met as `rateLimit` says. */
  grant: (record: R, rateLimit: RateLimitMode) => Promise<TokenResponse>;
  /** "location" or "company": how log lines and errors name the owner of a token. */
  noun: string;
  /** Why `grant`'s failure for the record will not pass without a reinstall; "" when it may. Default: a dead refresh token. */
  refusedForGood?: (error: unknown, record: R) => string;
  /** The error when the record is gone. */
  missing: (id: string) => Error;
  now: () => number;
  log: Logger;
  leaseMs?: number;
  waitMs?: number;
  storeRetryMs?: number;
}

/** How soon a job whose token is being refreshed (here, or by another process) looks again, rather than await the refresh. */
const REFRESHING_WAIT_MS = 1000;

/**
 * Refresh tokens are single-use, so a refresh is single-flight twice over: one
 * promise per id inside this process, and a lease row in SQLite between processes
 * (the server and the CLI). `validToken(id)`: the record with an access token good for
 * at least REFRESH_MARGIN_MS more; `forJob(id)`: the same for a queue job, or how long
 * it waits; `refresh(id, force)`: refreshed now if needed, or always with `force`, even
 * a token refused before; `confirm(id)`: see there.
 */
export function createRefresher<R extends LeasedToken>(deps: RefresherDeps<R>) {
  const r: Refreshing<R> = {
    deps,
    refusedForGood: deps.refusedForGood ?? ((error: unknown) => deadGrantNote(error, deps.noun)),
    leaseMs: deps.leaseMs ?? 60_000,
    waitMs: deps.waitMs ?? 45_000,
    storeRetryMs: deps.storeRetryMs ?? RETRY.storeToken.firstMs,
    inflight: new Map(),
    coolingUntil: new Map(),
  };
  return {
    validToken: (id: string) => validToken(r, id),
    forJob: (id: string) => forJob(r, id),
    refresh: (id: string, force = false, rateLimit: RateLimitMode = "wait") => refresh(r, id, force, rateLimit),
    confirm: (id: string) => confirm(r, id),
  };
}

/** One refresher's settings and what it has running. */
interface Refreshing<R extends LeasedToken> {
  deps: RefresherDeps<R>;
  refusedForGood: (error: unknown, record: R) => string;
  leaseMs: number;
  waitMs: number;
  storeRetryMs: number;
  /** Per id, the refresh running in this process. */
  inflight: Map<string, Promise<R>>;
  /** Per id, until when the CRM's 429 to a job's refresh asked us to wait: on the clock the job's own retry is scheduled by. */
  coolingUntil: Map<string, number>;
}

function refresh<R extends LeasedToken>(r: Refreshing<R>, id: string, force: boolean, rateLimit: RateLimitMode): Promise<R> {
  const running = r.inflight.get(id);
  if (running) return running;
  const started = refreshOnce(r, id, force, false, rateLimit)
    .then(({ record }) => record, (error: unknown) => cooling(r, id, rateLimit, error))
    .finally(() => r.inflight.delete(id));
  r.inflight.set(id, started);
  return started;
}

/**
 * A job's refresh the CRM asked to wait (429): the jobs wait until then, noted before the
 * refresh stops running, so that no job looking meanwhile asks again. Rethrows `error`.
 */
function cooling<R extends LeasedToken>(r: Refreshing<R>, id: string, rateLimit: RateLimitMode, error: unknown): never {
  const asked = error instanceof AppError ? error.retryAfterMs : undefined;
  if (rateLimit === "throw" && asked) r.coolingUntil.set(id, r.deps.now() + asked);
  throw error;
}

/**
 * A forced refresh whose grant starts in this call, for an answer about now (is the app
 * still installed?): undefined, without asking, when another refresh is running here or
 * in another process, or got there first: its answer may be older than the question.
 * Not joined by `refresh` (which must wait for a running one): the lease keeps the two
 * from spending the token twice.
 */
async function confirm<R extends LeasedToken>(r: Refreshing<R>, id: string): Promise<R | undefined> {
  if (r.inflight.has(id)) return undefined;
  const { record, own } = await refreshOnce(r, id, true, true, "wait");
  return own ? record : undefined;
}

/**
 * `own`: this call's grant made the record, not another process's. `ownOnly`: does not
 * wait for another process's lease, whose answer would not be its own; nor does a job's
 * refresh (`rateLimit` "throw"), which must hold no worker: both get the record as it is.
 */
async function refreshOnce<R extends LeasedToken>(
  r: Refreshing<R>,
  id: string,
  force: boolean,
  ownOnly: boolean,
  rateLimit: RateLimitMode,
): Promise<{ record: R; own: boolean }> {
  const { store, missing, now } = r.deps;
  const giveUpAt = wallClock() + r.waitMs;
  const first = await store.get(id);
  for (let record = first; ; record = await store.get(id)) {
    if (!record) throw missing(id);
    // Someone else refreshed while we waited: their pair is ours to use. The serial, not
    // the refresh token, tells: a location renewed through its company has none.
    const rotated = record.serial !== first?.serial;
    if (rotated) return { record, own: false };
    if (!force && !needsRefresh(record.expiresAt, now())) return { record, own: true };
    // Refused before: only a forced refresh presents it again (the refusal may
    // have been our own client credentials', since mended).
    if (record.refreshError && !force) throw new AppError("REFRESH_FAILED", `refresh token failed: ${record.refreshError}`);
    // Lease times are wall-clock: they coordinate real processes, not business time.
    if (await store.tryLease(id, record.serial, wallClock(), wallClock() + r.leaseMs)) return refreshHoldingLease(r, id, record, rateLimit);
    if (ownOnly || rateLimit === "throw") return { record, own: false };
    if (wallClock() > giveUpAt) {
      throw new AppError("REFRESH_FAILED", "refresh token failed: another process is still refreshing this token");
    }
    await sleep(100);
  }
}

async function refreshHoldingLease<R extends LeasedToken>(
  r: Refreshing<R>,
  id: string,
  record: R,
  rateLimit: RateLimitMode,
): Promise<{ record: R; own: boolean }> {
  const { store, grant, noun, missing, log } = r.deps;
  let fresh: TokenResponse;
  try {
    fresh = await grant(record, rateLimit);
  } catch (error) {
    const latest = await store.get(id);
    // invalid_grant because another process rotated the token first: use the newer pair.
    if (latest && latest.serial !== record.serial) return { record: latest, own: false };
    await store.releaseLease(id, record.serial, r.refusedForGood(error, record));
    log.error(`token refresh failed for ${noun} ${id}: ${errorMessage(error)}`);
    const retryAfterMs = error instanceof AppError ? error.retryAfterMs : undefined;
    throw new AppError("REFRESH_FAILED", `refresh token failed: ${errorMessage(error)}`, { cause: error, retryAfterMs });
  }
  await storeFresh(r, id, record, fresh);
  log.info(`refreshed the access token of ${noun} ${id}`);
  const stored = await store.get(id);
  if (!stored) throw missing(id);
  return { record: stored, own: true };
}

/**
 * The CRM has spent the old refresh token: the new pair exists only here until it is
 * stored, so a refused write is tried again before the token is lost to it.
 */
async function storeFresh<R extends LeasedToken>(r: Refreshing<R>, id: string, record: R, fresh: TokenResponse): Promise<void> {
  const { store, noun, now, log } = r.deps;
  const save = async () => {
    const at = now();
    if (!(await store.updateTokens(id, fresh.accessToken, fresh.refreshToken, at + fresh.expiresIn * 1000, at))) {
      // Nothing to retry: gone is gone.
      throw new AbortError(new AppError("STORE_FAILED", `failed to update token in store: the ${noun} was removed meanwhile`));
    }
  };
  try {
    await pRetry(save, {
      ...pRetryOptions(RETRY.storeToken, r.storeRetryMs),
      onFailedAttempt: ({ error, retriesLeft }) => {
        if (retriesLeft > 0) log.error(`${noun} ${id}: the refreshed token could not be stored (${errorMessage(error)}); trying again`);
      },
    });
  } catch (error) {
    await store.releaseLease(id, record.serial);
    if (error instanceof AppError) throw error;
    throw new AppError("STORE_FAILED", `failed to update token in store: ${errorMessage(error)}`, { cause: error });
  }
}

async function validToken<R extends LeasedToken>(r: Refreshing<R>, id: string): Promise<R> {
  const record = await r.deps.store.get(id);
  if (!record) throw r.deps.missing(id);
  if (!needsRefresh(record.expiresAt, r.deps.now())) return record;
  return refresh(r, id, false, "wait");
}

/**
 * validToken for a queue job, which must hold no worker while it waits: the record, or
 * `{ waitMs }` when a refresh of it runs already (in this process, or in another holding
 * the lease: the job looks again shortly, rather than await it) or the CRM's 429 asked to
 * wait. A refresh it starts meets a 429 by throwing it (REFRESH_FAILED with
 * retryAfterMs), never by sleeping.
 */
async function forJob<R extends LeasedToken>(r: Refreshing<R>, id: string): Promise<R | { waitMs: number }> {
  const { store, missing, now } = r.deps;
  const record = await store.get(id);
  if (!record) throw missing(id);
  if (!needsRefresh(record.expiresAt, now())) return record;
  if (r.inflight.has(id)) return { waitMs: REFRESHING_WAIT_MS };
  const cooling = (r.coolingUntil.get(id) ?? 0) - now();
  if (cooling > 0) return { waitMs: cooling };
  r.coolingUntil.delete(id);
  const fresh = await refresh(r, id, false, "throw");
  return needsRefresh(fresh.expiresAt, now()) ? { waitMs: REFRESHING_WAIT_MS } : fresh;
}

/** Why a refresh token will not work again, "" when it may: the CRM refused it (core/retry-policy.ts, isDeadGrant). */
export function deadGrantNote(error: unknown, noun: string): string {
  if (!isDeadGrant(error)) return "";
  const how = noun === "company" ? "install the app again from the agency" : "reinstall the app for this location";
  return `the CRM refused the refresh token (${errorMessage(error)}); ${how}`;
}
