import type { AlertStore } from "../../store/contract.ts";
import type { OpenCondition } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import type { Logger } from "../log.ts";
import { formatDuration } from "../operator/outages.ts";
import type { Condition, ConditionSource } from "./conditions.ts";

/** While a condition lasts, it is said again at most this often. */
export const REPEAT_EVERY_MS = 60 * 60_000;
/**
 * A condition back within REPEAT_EVERY_MS of its end is started again only once it has
 * lasted this long: one that flaps (a cap's use dipping under 80 % as a reserved send
 * fails, a key's probe working once) is one start and one end, not a pair per look.
 */
export const FLAP_GRACE_MS = 5 * 60_000;

export interface EvaluatorOptions {
  store: Pick<AlertStore, "open" | "start" | "adopt" | "repeat" | "end" | "waiting">;
  sources: readonly ConditionSource[];
  log: Logger;
  now: () => number;
  /** Names this bridge in every text: an agency may run several. */
  name: string;
  /** An alert was recorded (or could only be kept in memory: `text`): the sender looks now. */
  recorded: (unstored?: string) => void;
}

/**
 * One look at what needs a person: the conditions every source finds now, set against
 * the conditions alerted and not yet cleared (the `alert_conditions` table). A new one
 * that has lasted its grace starts (one alert), one that is gone ends (one alert), one
 * that goes on is said again at most hourly, and not while its last alert still waits.
 * Each is recorded with its alert in one transaction, so a restart neither repeats a start
 * nor loses an end. A database that refuses the record: the alert is sent from memory.
 */
export function createEvaluator(options: EvaluatorOptions) {
  const { store, log, now } = options;
  const firstSeen = new Map<string, number>();
  const endedAt = new Map<string, number>(); // when each condition last ended: see graceOf
  let endsFrom = -Infinity;
  /** Conditions alerted while the database refused to record them. */
  const unrecorded = new Map<string, OpenCondition>();
  const say = (text: string) => `${options.name}: ${text}`;
  const keep = (write: () => Promise<void>, text: string): Promise<boolean> => record(options, write, text);

  async function start(c: Condition, since: number, t: number): Promise<void> {
    const text = say(c.text);
    if (!(await keep(() => store.start(c.key, c.title, text, t, since), text))) unrecorded.set(c.key, { condition: c.key, title: c.title, startedAt: since, repeatedAt: t });
  }

  async function goOn(c: Condition, open: OpenCondition, t: number): Promise<void> {
    if (unrecorded.has(c.key) && !(await adopt(store, open))) return; // still refused: it stays in memory
    unrecorded.delete(c.key);
    if (t - open.repeatedAt < REPEAT_EVERY_MS || (await store.waiting(c.key))) return;
    const text = say(`still, for ${formatDuration(t - open.startedAt)}: ${c.text}`);
    await keep(() => store.repeat(c.key, text, t), text);
  }

  async function end(open: OpenCondition, t: number): Promise<void> {
    const text = say(`resolved after ${formatDuration(t - open.startedAt)}: ${open.title}.`);
    await keep(() => store.end(open.condition, text, t), text);
    unrecorded.delete(open.condition);
    endedAt.set(open.condition, t);
  }

  async function lookOnce(): Promise<string[]> {
    const t = now();
    const { current, complete } = await gather(options.sources, log);
    for (const key of firstSeen.keys()) if (!current.has(key)) firstSeen.delete(key);
    for (const [key, at] of endedAt) if (t - at >= REPEAT_EVERY_MS) endedAt.delete(key);
    const open = new Map([...(await store.open()).map((o) => [o.condition, o] as const), ...unrecorded]);
    for (const c of current.values()) {
      const known = open.get(c.key);
      const since = firstSeen.get(c.key) ?? t;
      firstSeen.set(c.key, since);
      if (known) await goOn(c, known, t);
      else if (t - since >= graceOf(c, endedAt.get(c.key), t)) await start(c, since, t);
    }
    // A source that failed to look says nothing of its conditions: none of them ends on that.
    if (complete && t >= endsFrom) for (const o of open.values()) if (!current.has(o.condition)) await end(o, t);
    return [...current.keys()];
  }

  return {
    /**
     * No condition ends before `at`: a new process knows no outage or hold yet (both live
     * in memory, and a restart clears their records) until its calls find them again.
     */
    endsFrom(at: number): void {
      endsFrom = at;
    },
    /** Looks once (after the look in progress, if any); returns the keys of the conditions found (started or not yet). */
    look: oneAtATime(lookOnce),
  };
}

/** How long `c` must last before it starts: its own grace, and FLAP_GRACE_MS when it ended within the hour. */
function graceOf(c: Condition, endedAt: number | undefined, t: number): number {
  const grace = c.graceMs ?? 0;
  return endedAt !== undefined && t - endedAt < REPEAT_EVERY_MS ? Math.max(grace, FLAP_GRACE_MS) : grace;
}

/** `run` made to wait for its call before: two looks never interleave their reads and records. */
function oneAtATime<T>(run: () => Promise<T>): () => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return () => {
    const next = last.catch(() => undefined).then(run);
    last = next;
    return next;
  };
}

/** Records an alert; when the database refuses it, hands it to the sender to go from memory. */
async function record(options: EvaluatorOptions, write: () => Promise<void>, text: string): Promise<boolean> {
  try {
    await write();
    options.recorded();
    return true;
  } catch (error) {
    options.log.warn(`alerts: cannot record an alert (${errorMessage(error)}); it is sent from memory, and lost if bridge stops first`);
    options.recorded(text);
    return false;
  }
}

/** A condition alerted from memory, now recorded as open; false while the database still refuses. */
async function adopt(store: EvaluatorOptions["store"], open: OpenCondition): Promise<boolean> {
  try {
    await store.adopt(open.condition, open.title, open.startedAt);
    return true;
  } catch {
    return false;
  }
}

async function gather(sources: readonly ConditionSource[], log: Logger): Promise<{ current: Map<string, Condition>; complete: boolean }> {
  const current = new Map<string, Condition>();
  let complete = true;
  for (const source of sources) {
    try {
      for (const c of await source()) current.set(c.key, c);
    } catch (error) {
      complete = false;
      log.warn(`alerts: a condition could not be looked at: ${errorMessage(error)}`);
    }
  }
  return { current, complete };
}
