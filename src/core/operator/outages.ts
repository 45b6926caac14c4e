import type { OutageRecords } from "../../store/contract.ts";
import { errorMessage } from "../../errors.ts";
import type { CallRecord, Remote } from "../clients/observe.ts";
import type { FailureKind } from "../clients/network.ts";
import type { Logger } from "../log.ts";

export interface OutagesOptions {
  log: Logger;
  /** Wall-clock time: an outage's length is real time. */
  now: () => number;
}

/** An outage that goes on is recorded again at most this often: status needs its last failure, not each. */
const RECORD_EVERY_MS = 5_000;

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
export function describeRemote(remote: Remote): { name: string; waits: string; resume: string } {
  if (remote === "crm") return { name: "HighLevel", waits: "status reports wait", resume: "status reports resume" };
  if (remote === "cast") return { name: "Cast.ph", waits: "sends wait", resume: "sends resume" };
  return { name: `phone ${remote.slice("phone:".length)}`, waits: "its messages wait", resume: "its messages go again" };
}

/**
 * HighLevel, Cast or a phone unreachable (no answer, a timeout, a 5xx), logged once when it
 * starts and once when it ends. Every call in between fails too, and the messages
 * waiting on it each say so already: one line per call would bury the start and the
 * end of the outage, the two facts an operator looks for. Fed by the clients' observer.
 */
export function createOutages(options: OutagesOptions) {
  const { log, now } = options;
  const current = new Map<Remote, Outage>();
  const waiting = new Map<Remote, Set<string>>();

  const { record, stillWaiting, recordTo } = createRecorder(log, now);

  return {
    /** A call's outcome; the outage's record is written meanwhile (best effort, never awaited by the call). */
    observe(call: CallRecord): void {
      const outage = current.get(call.remote);
      const { name, waits, resume } = describeRemote(call.remote);
      if (call.ok) {
        if (!outage) return;
        current.delete(call.remote);
        void record(undefined, call.remote);
        // The messages that met a failure, or (serve's count) every message still waiting:
        // one that arrived during the outage and was never tried waited too.
        const met = waiting.get(call.remote)?.size ?? 0;
        waiting.delete(call.remote);
        const said = (stored: number) => `${name} reachable again after ${formatDuration(now() - outage.since)} (${outageCounts(outage, Math.max(met, stored))}): ${resume}`;
        return sayOnce(stillWaiting(call.remote), (stored) => log.info(said(stored)));
      }
      const kind = call.error ?? "other";
      const reason = call.message ?? `${call.operation} failed`;
      if (outage) {
        Object.assign(outage, { kind, reason, failedCalls: outage.failedCalls + 1 });
        void record(outage, call.remote);
        log.debug(`${name} still unreachable (${kind}): ${reason}`);
        return;
      }
      const started: Outage = { remote: call.remote, since: now(), kind, reason, failedCalls: 1, waitingMessages: 0 };
      current.set(call.remote, started);
      void record(started, call.remote);
      // A Cast outage stops every SMS; a HighLevel one only delays what the CRM shows; a phone, its locations'.
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
    /**
     * From now on, each outage is recorded where `bridge status`, another process, reads it.
     * Only serve records (createRun's start), after clearing what a stopped serve left.
     */
    recordTo,
    /** The outages going on now (for status and doctor). */
    list(): Outage[] {
      return [...current.values()].map((outage) => ({ ...outage, waitingMessages: waiting.get(outage.remote)?.size ?? 0 }));
    },
  };
}

export type Outages = ReturnType<typeof createOutages>;

/** `say` with the count, at once when it is known, else once it is read. */
function sayOnce(count: number | Promise<number>, say: (count: number) => void): void {
  if (typeof count === "number") say(count);
  else void count.then(say);
}

/** An ended outage's counts: its failed calls, and the messages that waited. */
function outageCounts(outage: Outage, messages: number): string {
  return [plural(outage.failedCalls, "failed call"), ...(messages > 0 ? [`${plural(messages, "message")} waited`] : [])].join(", ");
}

/**
 * What serve records of its outages for `bridge status`, another process: an outage when it
 * starts, again at most every RECORD_EVERY_MS while it goes on, and its end. Best effort: a
 * database that refuses a write must not fail the call that was observed.
 */
function createRecorder(log: Logger, now: () => number) {
  const recorded = new Map<Remote, number>();
  let records: Pick<OutageRecords, "save" | "end" | "waits"> | undefined;
  return {
    /** Never rejects: a refused write is logged. */
    async record(outage: Outage | undefined, remote: Remote): Promise<void> {
      try {
        if (!outage) return void (recorded.delete(remote), await records?.end(remote));
        if (now() - (recorded.get(remote) ?? -Infinity) < RECORD_EVERY_MS) return;
        recorded.set(remote, now());
        await records?.save({ ...outage, lastFailedAt: now() });
      } catch (error) {
        log.debug(`the outage of ${describeRemote(remote).name} could not be recorded for bridge status: ${errorMessage(error)}`);
      }
    },
    /** Serve's count of the messages waiting on `remote` now (never rejects); 0 at once where nothing is recorded. */
    stillWaiting(remote: Remote): number | Promise<number> {
      return records ? records.waits(remote).catch(() => 0) : 0;
    },
    /**
     * From now on, each outage is recorded where `bridge status`, another process, reads it.
     * Only serve records (createRun's start), after clearing what a stopped serve left
     * when no other server runs (`clear`): a running one's outages are live.
     */
    async recordTo(store: Pick<OutageRecords, "save" | "end" | "clear" | "waits">, clear = true): Promise<void> {
      if (clear) await store.clear();
      records = store;
    },
  };
}

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
