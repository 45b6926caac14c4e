import type { CallRecord, Remote } from "../clients/observe.ts";
import type { FailureKind } from "../clients/network.ts";
import type { Logger } from "../log.ts";

export interface OutagesOptions {
  log: Logger;
  /** Wall-clock time: an outage's length is real time. */
  now: () => number;
}

export interface Outage {
  remote: Remote;
  since: number;
  kind: FailureKind;
  /** What the last failed call met. */
  reason: string;
  failedCalls: number;
  /** Messages whose send or status report waited for it. */
  waitingMessages: number;
}

/** How each remote is named in the log, and what waits while it cannot be reached. */
const REMOTES: Record<Remote, { name: string; waits: string; resume: string }> = {
  crm: { name: "HighLevel", waits: "status reports wait", resume: "status reports resume" },
  cast: { name: "Cast.ph", waits: "sends wait", resume: "sends resume" },
};

/**
 * HighLevel or Cast unreachable (no answer, a timeout, a 5xx), logged once when it
 * starts and once when it ends. Every call in between fails too, and the messages
 * waiting on it each say so already: one line per call would bury the start and the
 * end of the outage, the two facts an operator looks for. Fed by the clients' observer.
 */
export function createOutages(options: OutagesOptions) {
  const { log, now } = options;
  const current = new Map<Remote, Outage>();
  const waiting = new Map<Remote, Set<string>>();

  return {
    observe(call: CallRecord): void {
      const outage = current.get(call.remote);
      const { name, waits, resume } = REMOTES[call.remote];
      if (call.ok) {
        if (!outage) return;
        current.delete(call.remote);
        const messages = waiting.get(call.remote)?.size ?? 0;
        waiting.delete(call.remote);
        const counts = [plural(outage.failedCalls, "failed call"), ...(messages > 0 ? [`${plural(messages, "message")} waited`] : [])].join(", ");
        log.info(`${name} reachable again after ${formatDuration(now() - outage.since)} (${counts}): ${resume}`);
        return;
      }
      const kind = call.error ?? "other";
      const reason = call.message ?? `${call.operation} failed`;
      if (outage) {
        Object.assign(outage, { kind, reason, failedCalls: outage.failedCalls + 1 });
        log.debug(`${name} still unreachable (${kind}): ${reason}`);
        return;
      }
      current.set(call.remote, { remote: call.remote, since: now(), kind, reason, failedCalls: 1, waitingMessages: 0 });
      // A Cast outage stops every SMS; a HighLevel one only delays what the CRM shows.
      const level = call.remote === "cast" ? log.error : log.warn;
      level(`${name} unreachable (${kind}): ${reason}; ${waits} until it answers`);
    },
    /**
     * A message waits for `remote` after a failed call: counted in its outage, if one is
     * going on. True then, and the outage's lines speak for the message: its own is debug.
     */
    waited(remote: Remote, messageId: string): boolean {
      if (!current.has(remote)) return false;
      let ids = waiting.get(remote);
      if (!ids) waiting.set(remote, (ids = new Set()));
      ids.add(messageId);
      return true;
    },
    /** The outages going on now (for status and doctor). */
    list(): Outage[] {
      return [...current.values()].map((outage) => ({ ...outage, waitingMessages: waiting.get(outage.remote)?.size ?? 0 }));
    },
  };
}

export type Outages = ReturnType<typeof createOutages>;

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

/** `45 s`, `12 min 5 s`, `3 h 20 min`: an outage's length, as a person reads it. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
