import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { errorMessage } from "../errors.ts";
import { wallClock } from "./clock.ts";
import type { LeaseStore, ServerStore } from "../store/contract.ts";
import { SERVER_ALIVE_MS } from "../store/contract-servers.ts";
import type { Logger } from "./log.ts";

/** A server's heartbeat, and the leader's lease renewed, this often. */
export const BEAT_MS = 5_000;
/** The leader's lease lasts this long unrenewed: a stopped leader is replaced within it. */
export const LEADER_TTL_MS = 15_000;
/** A server whose heartbeat is older than this is presumed dead (its start-up work and its jobs are another's). */
export const ALIVE_MS = SERVER_ALIVE_MS;
/** A server whose heartbeat has not been stored for this long starts no new sends: half the time after which it is presumed dead. */
export const CLAIMS_MS = ALIVE_MS / 2;
/** The lease of the periodic work: pruning, reconciliation, forgetting unused keys, rescue. */
export const LEADER = "leader";

export interface PresenceOptions {
  servers: ServerStore;
  leases: LeaseStore;
  log: Logger;
  /** This server's id: the one its claims carry on a shared database (newServerId); a new one when not given. */
  id?: string;
  /** What the server says it is: its host name unless given (CAST_LOCAL_ADDRESS where set). */
  address?: string;
  beatMs?: number;
  leaderTtlMs?: number;
  /** CLAIMS_MS unless given (tests). */
  claimsMs?: number;
}

export type Presence = ReturnType<typeof createPresence>;

/** A server's id, random per start: logged, listed by `bridge status`, carried by its claims. */
export function newServerId(): string {
  return randomBytes(8).toString("hex");
}

/**
 * This server among the others on one database (docs/cli.md, `bridge status`): a random
 * id per start, a heartbeat row renewed every few seconds, and the leader's lease, held
 * by one server at a time, renewed at each beat. A beat that fails is logged, never
 * thrown: the server goes on, and loses the lead when its lease lapses.
 */
export function createPresence(options: PresenceOptions) {
  const { servers, leases, log } = options;
  const id = options.id ?? newServerId();
  const address = options.address ?? hostname();
  const state: PresenceState = { leading: false, leadUntil: 0, others: false, started: false, beatAt: -Infinity };
  const beat = () => beatOnce(options, id, address, state);
  let timer: ReturnType<typeof setInterval> | undefined;

  return {
    id,
    address,
    /** Records the first heartbeat and tries for the lead, then keeps beating. */
    async start(): Promise<void> {
      await beat();
      state.started = true;
      timer = setInterval(() => void beat(), options.beatMs ?? BEAT_MS);
      timer.unref();
    },
    /** Whether this server does the periodic work now: it holds the leader's lease, renewed within its time limit. */
    leads(): boolean {
      return state.leading && wallClock() < state.leadUntil;
    },
    /** Whether the last heartbeat found another server's fresh (no database asked now). */
    othersSeen: (): boolean => state.others,
    /**
     * Whether this server may start sends: its heartbeat was stored within CLAIMS_MS. Past
     * that the leader may soon presume it dead and send its sends again: it starts none.
     */
    claims: (): boolean => wallClock() - state.beatAt < (options.claimsMs ?? CLAIMS_MS),
    /** Whether another server's heartbeat is fresh: then start-up work that assumes one server is left alone. */
    async othersAlive(): Promise<boolean> {
      return (await servers.others(id, ALIVE_MS)).length > 0;
    },
    /** A clean stop: the lead let go; with `forget` (no send left), the row removed, else the leader rescues what is left once it is stale. */
    async stop(forget = true): Promise<void> {
      clearInterval(timer);
      try {
        if (state.leading) await leases.release(LEADER, id);
        state.leading = false;
        if (forget) await servers.gone(id);
      } catch (error) {
        log.error(`servers: cannot record this server's stop: ${errorMessage(error)}`);
      }
    },
  };
}

/** What a presence knows between beats. `others`: the last beat saw another server's heartbeat; `started`: the first beat is told by serve's lines. */
interface PresenceState {
  leading: boolean;
  leadUntil: number;
  others: boolean;
  started: boolean;
  /** When this server's heartbeat was last stored. */
  beatAt: number;
}

/** One heartbeat: the row renewed (and whether another server's is fresh), then the leader's lease tried for. Failures are logged, never thrown. */
async function beatOnce(options: PresenceOptions, id: string, address: string, state: PresenceState): Promise<void> {
  const { servers, leases, log } = options;
  const ttlMs = options.leaderTtlMs ?? LEADER_TTL_MS;
  try {
    await servers.beat(id, address);
    state.beatAt = wallClock();
    state.others = (await servers.others(id, ALIVE_MS)).length > 0;
  } catch (error) {
    const claimsMs = options.claimsMs ?? CLAIMS_MS;
    const stopped = wallClock() - state.beatAt >= claimsMs ? `; none stored for over ${claimsMs / 1000} s: this server starts no new sends until one is` : "";
    log.error(`servers: cannot record this server's heartbeat: ${errorMessage(error)}${stopped}`);
  }
  const asked = wallClock();
  try {
    const leads = (await leases.take(LEADER, id, ttlMs)) !== undefined;
    if (state.started && leads !== state.leading) log.info(`servers: this server (${id}) ${leads ? "leads the periodic work now" : "no longer leads the periodic work"}`);
    state.leading = leads;
    if (leads) state.leadUntil = asked + ttlMs;
  } catch (error) {
    log.error(`servers: cannot renew the leader's lease: ${errorMessage(error)}`);
  }
}
