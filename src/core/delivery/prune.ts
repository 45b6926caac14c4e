import { setImmediate } from "node:timers/promises";
import type { AppSessionStore, GatewayKeys, UnsubscribedStore } from "../../store/contract.ts";
import type { InboundStore } from "../../store/contract.ts";
import type { JobStore } from "../../store/contract.ts";
import { errorMessage } from "../../errors.ts";
import { wallClock } from "../clock.ts";
import type { Logger } from "../log.ts";

/** Finished jobs are looked for this often, and deleted this many per statement. */
const PRUNE_EVERY_MS = 60 * 60_000;
/** A server that does not lead looks this often whether it leads now (and so prunes when due). */
const LEAD_LOOK_MS = 60_000;
const PRUNE_BATCH = 1000;
/**
 * A key's stored unsubscribed list goes once no read renewed it for this long: its key
 * sent nothing meanwhile (a key in use is read again every few minutes). Its next send reads it anew.
 */
export const UNSUBSCRIBED_KEEP_MS = 24 * 60 * 60_000;

export interface PrunerOptions {
  jobs: Pick<JobStore, "prune">;
  log: Logger;
  now: () => number;
  /** How long a finished message stays in the log (RETENTION_DAYS). Its id is remembered for ever. */
  retentionMs: number;
  /** Replies, whose finished ones go after the same retention. */
  replies?: Pick<InboundStore, "prune">;
  /** The API keys kept for receipts: forgotten once no unsettled job was sent with them. */
  keys?: Pick<GatewayKeys, "forgetUnused">;
  /** Whether this server does the periodic work now (the leader, src/core/servers.ts); always when not given. */
  leads?: () => boolean;
  /** The settings page's sessions: the expired ones go with each prune. */
  appSessions?: Pick<AppSessionStore, "prune">;
  /** Cast's unsubscribed lists of the keys: the ones no send has read for UNSUBSCRIBED_KEEP_MS go with each prune. */
  unsubscribed?: Pick<UnsubscribedStore, "prune">;
}

/**
 * Removes finished jobs (and their timeline) past retention: at start, then hourly, a
 * batch at a time with requests let in between, so a month's backlog never stalls the server.
 * The API keys kept for receipts go too, once no unsettled job needs them, and the stored
 * unsubscribed lists of keys no send has used for a day. With several
 * servers, only the leader prunes: a server that takes the lead prunes within a minute.
 */
export function createPruner(options: PrunerOptions) {
  const { jobs, log, now, retentionMs } = options;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running = false;
  let lastPrune = -Infinity;

  /** Prunes when this server leads and its last prune is an hour old (or it never pruned): a new leader prunes within a minute. */
  function due(): void {
    if (options.leads && !options.leads()) return;
    if (wallClock() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = wallClock();
    void prune();
  }

  async function prune(): Promise<void> {
    const before = now() - retentionMs;
    let deleted = 0;
    let replies = 0;
    try {
      let batch: number;
      do {
        const jobsBatch = await jobs.prune(before, PRUNE_BATCH);
        const repliesBatch = (await options.replies?.prune(before, PRUNE_BATCH)) ?? 0;
        deleted += jobsBatch;
        replies += repliesBatch;
        batch = Math.max(jobsBatch, repliesBatch);
        await setImmediate();
      } while (batch === PRUNE_BATCH && running);
    } catch (error) {
      log.error(`queue: cannot remove finished jobs: ${errorMessage(error)}`);
    }
    if (deleted > 0) log.info(`queue: removed ${deleted} finished job(s) older than ${retentionMs / 86_400_000} days`);
    if (replies > 0) log.info(`queue: removed ${replies} finished reply(ies) older than ${retentionMs / 86_400_000} days`);
    await forgetUnused(options);
  }

  return {
    start(): void {
      running = true;
      // Each start prunes (when this server leads), as it did before it kept its last prune's time.
      lastPrune = -Infinity;
      due();
      timer = setInterval(due, options.leads ? LEAD_LOOK_MS : PRUNE_EVERY_MS);
      timer.unref();
    },
    stop(): void {
      running = false;
      clearInterval(timer);
    },
  };
}

/** What no message needs any more, forgotten after each prune: kept API keys, expired sessions, unread unsubscribed lists. */
async function forgetUnused({ keys, appSessions, unsubscribed, log, now }: PrunerOptions): Promise<void> {
  try {
    await keys?.forgetUnused();
  } catch (error) {
    log.error(`queue: cannot forget the API keys no message waits for: ${errorMessage(error)}`);
  }
  await appSessions?.prune(now()).catch((error: unknown) => log.error(`queue: cannot remove expired settings-page sessions: ${errorMessage(error)}`));
  try {
    const lists = (await unsubscribed?.prune(UNSUBSCRIBED_KEEP_MS)) ?? 0;
    if (lists > 0) log.info(`queue: removed ${lists} stored Cast unsubscribed list(s) no send has read for a day`);
  } catch (error) {
    log.error(`queue: cannot remove the stored Cast unsubscribed lists no send reads: ${errorMessage(error)}`);
  }
}
