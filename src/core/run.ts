import { resendWindows } from "./clients/registry.ts";
import { createWorker, type Worker } from "./delivery/worker.ts";
import type { Core } from "./index.ts";
import { scheduleSync } from "./installs/sync.ts";
import { recoverInterrupted } from "./delivery/recovery.ts";
import { createRescuer, forgetServers } from "./operator/rescue.ts";
import { apiKeysInUse } from "./operator/status.ts";
import { createPresence, type Presence } from "./servers.ts";

/** Reconciliation with HighLevel's installed locations: hourly, the first soon after start (missed INSTALLs while down). */
const SYNC_EVERY_MS = 3_600_000;
const FIRST_SYNC_MS = 60_000;
/** Servers sharing the store read three times the due jobs they could start, to start different ones (worker-fill.ts). */
const SPREAD = 3;

/** What a test leaves out or makes quicker; `serve` uses the defaults. */
export interface RunOptions {
  /** Start the queue worker (default true). Without it, the worker exists but takes no jobs. */
  worker?: boolean;
  /** The worker's longest sleep between looks at the queue (default: the worker's). */
  pollMs?: number;
  /** Read the gateway keys' balances now and every few minutes (default true). */
  balances?: boolean;
  /** Reconcile with HighLevel's installed locations on this schedule; false: never (default hourly). */
  sync?: { everyMs: number; firstMs: number } | false;
  /** How often alerts look for what needs a person (default every 30 s; nothing without ALERT_WEBHOOK_URL). */
  alertEveryMs?: number;
  /** What this server says it is among the others (default: its host name). */
  address?: string;
  /** The heartbeat's and the leader's renewal's period (default 5 s). */
  beatMs?: number;
  /**
   * This server is the database's only one (SQLite's serve lock): the heartbeats and leases
   * left by a serve that stopped (kill -9) are over at start, not after their time limits.
   */
  alone?: boolean;
}

export interface Run {
  /** The queue worker: the server wakes it on new jobs and reports whether it runs. */
  worker: Worker;
  /** This server among the others on the database: its id, whether it leads the periodic work. */
  presence: Presence;
  /** Starts what runs beside the server; call it once the server listens. */
  start(): Promise<void>;
  /** Stops it all, giving the sends in flight up to `graceMs`. Returns how many were left. */
  stop(graceMs: number): Promise<number>;
}

/**
 * Starts this server's presence; `alone` (SQLite's serve lock: no other server can run), the
 * heartbeats and leases a serve killed before left are over first, not after their time limits.
 */
async function startPresence(core: Core, presence: Presence, alone = false): Promise<void> {
  if (alone) {
    for (const lease of await core.leases.list()) if (lease.holder !== presence.id) await core.leases.release(lease.name, lease.holder);
    for (const server of await core.servers.list()) if (server.id !== presence.id) await core.servers.gone(server.id);
  }
  await presence.start();
}

/**
 * What the leader does for servers presumed dead: their sends caught mid-way go again with
 * their keys (or are failed unknown past their gateway's window), fenced against them
 * (src/store/postgres/jobs-send.ts); then their rows are removed.
 */
function rescueSends(core: Core, windows: Readonly<Record<string, number>>) {
  const forget = forgetServers(core.servers, core.log);
  return async (dead: string[]): Promise<void> => {
    await recoverInterrupted(core.jobs, core.log, core.now(), windows, dead);
    await forget(dead);
  };
}

/**
 * The queue's worker of `createRun`. Servers sharing a database (PostgreSQL): no recovery
 * at start (the leader rescues a stopped server's sends), and while others are alive each
 * look starts different jobs (worker-fill.ts); a server alone keeps the order they came in.
 * A server whose heartbeat is not stored could be presumed dead while it sends: it starts none.
 */
function queueWorker(core: Core, options: RunOptions, presence: Presence, windows: Readonly<Record<string, number>>) {
  const shared = core.database.kind === "postgres";
  return createWorker({
    jobs: core.jobs,
    run: core.delivery.processOutbound,
    lastServed: core.delivery.scheduler.lastServed,
    readyAt: core.delivery.scheduler.readyAt,
    now: core.now,
    log: core.log,
    pollMs: options.pollMs,
    retentionMs: core.config.retentionMs,
    keys: core.gatewayKeys,
    replies: core.replies,
    resendWindows: windows,
    recoverAtStart: !shared,
    spread: () => (shared && presence.othersSeen() ? SPREAD : 1),
    claims: shared ? presence.claims : undefined,
    leads: presence.leads,
    appSessions: core.appSessions,
    unsubscribed: core.unsubscribed,
  });
}

/**
 * bridge's running parts around a core: the queue worker (with crash recovery and
 * pruning), the gateway keys' holds and balances, the receipt book, reconciliation and
 * the alerts to a person (their own loop: a slow webhook never holds a send), and this
 * server's presence among the others on the database (servers.ts): the periodic work
 * (pruning, reconciliation, rescue) runs only on the leader.
 * `serve` and the integration tests' bridge both run through this, so the tests run
 * what production runs; they differ only by `options`.
 */
export function createRun(core: Core, options: RunOptions = {}): Run {
  const { config, log } = core;
  // Servers sharing a database: this one's id is the one its claims carry (run_by), from the store.
  const presence = createPresence({ servers: core.servers, leases: core.leases, log, address: options.address, beatMs: options.beatMs, id: core.serverId });
  const windows = resendWindows(core.clients.gateways);
  const rescuer = createRescuer({ servers: core.servers, log, leads: presence.leads, rescue: rescueSends(core, windows) });
  const worker = queueWorker(core, options, presence, windows);
  core.delivery.doorbell.listen(() => worker.notify());
  const sync = options.sync ?? { everyMs: SYNC_EVERY_MS, firstMs: FIRST_SYNC_MS };
  let reconciliation: ReturnType<typeof scheduleSync> | undefined;
  return {
    worker,
    presence,
    async start() {
      await startPresence(core, presence, options.alone);
      // What a stopped server left is cleared only when no other runs: the others' holds, outages and posts are live.
      const alone = !(await presence.othersAlive());
      if (options.worker !== false) {
        await worker.start();
        await core.inbound.queue.start(alone);
      }
      if (alone) await core.gatewayKeys.clearHolds(); // no server holds a key now: the next send finds out again
      await core.operator.outages.recordTo(core.outageRecords, alone);
      if (options.balances !== false) core.operator.balances.start(() => apiKeysInUse(core.tokens, config.sms.apiKey));
      if (sync) reconciliation = scheduleSync(core.installs.sync, log, sync.everyMs, sync.firstMs, presence.leads);
      rescuer.start();
      core.alerts.start(options.alertEveryMs, presence.leads);
    },
    async stop(graceMs) {
      core.operator.balances.stop();
      await core.alerts.stop();
      await reconciliation?.stop();
      const [left] = await Promise.all([worker.stop(graceMs), core.inbound.queue.stop(graceMs)]);
      core.delivery.receipts.stop();
      await rescuer.stop();
      await core.delivery.owners.releaseAll();
      // Sends still in flight stay this server's until its heartbeat is stale: then the leader rescues them.
      await presence.stop(left === 0);
      return left;
    },
  };
}
