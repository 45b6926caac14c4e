import type { SmsGateway } from "../clients/gateway.ts";
import { errorMessage, type GatewayError } from "../../errors.ts";
import { probeOf, stillRefused, type Probe } from "../retry-policy.ts";
import { refusalKind } from "../clients/cast-answers.ts";
import type { Logger } from "../log.ts";
import { maskSecret } from "../mask.ts";
import { SHARED_HOLDS_MS, type SharedHolds } from "./holds-shared.ts";

export interface KeyHoldsOptions {
  sms: SmsGateway;
  log: Logger;
  now: () => number;
  /** How often a held key is probed (the balance call). */
  probeEveryMs?: number;
  /** How often the operator is reminded while a key is held. */
  remindEveryMs?: number;
  /** Told of each hold and release, so that other processes (`bridge status`) see them. */
  record?: { held(apiKey: string, hold: Hold): Promise<void>; released(apiKey: string): Promise<void> };
  /** A key works again: its waiting messages should look now, not at their next look. */
  wake?: () => Promise<void>;
  /** Every server's holds (servers sharing a database): a key held by any is held here too; released by any, here too. */
  shared?: { holds: SharedHolds; tagOf(apiKey: string): string };
  /** Whether this server probes the key (it owns it: key-owners.ts); `ownsNow` without asking the store. Default: always. */
  owns?: (apiKey: string) => Promise<boolean>;
  ownsNow?: (apiKey: string) => boolean;
}

export interface Hold {
  /** What the gateway said: the reason a message held too long is failed with. */
  reason: string;
  since: number;
  /** The gateway's HTTP status (401, 402 or 403), shown to the operator. */
  status: number;
}

interface Held extends Hold {
  probe: Probe;
  probedAt: number;
  remindedAt: number;
  probing: boolean;
}

/**
 * Account problems hold, they don't burn the queue (docs/architecture.md, "Holds"). The
 * gateway refusing the key or its account (core/clients/gateway.ts: key_refused,
 * out_of_credit, account_held) stops sending on that API key: its messages wait, the
 * operator is told at once and every few minutes, and the key is probed at most once a
 * minute (a balance call, or one waiting message let through: Probe, in
 * core/retry-policy.ts), driven by the messages that wait
 * for it; sending resumes by itself when a probe succeeds. Recorded in the database,
 * where every server reads the others' holds (`look`); one server probes a key (its owner).
 */
export function createKeyHolds(options: KeyHoldsOptions) {
  const keys: Keys = {
    options,
    held: new Map(),
    probeEveryMs: options.probeEveryMs ?? 60_000,
    remindEveryMs: options.remindEveryMs ?? 5 * 60_000,
  };
  return {
    /** How long a held key's messages wait before they look again: by then a probe is due (a release wakes them sooner). */
    lookAgainMs: keys.probeEveryMs,
    /** The gateway refused the key or its account (`error`): hold its messages, probed as the retry policy says. */
    hold: (apiKey: string, probe: Probe, error: GatewayError): void => hold(keys, apiKey, probe, error),
    /**
     * The hold on `apiKey`, if any; starts a probe, or reminds the operator, when one is
     * due. Undefined also when the caller's message is to go as the key's send probe.
     */
    check: (apiKey: string): Hold | undefined => check(keys, apiKey),
    /**
     * The message `check` just let through as the key's send probe did not go (no budget
     * yet): the probe is due again at once, not in a probe's time, for whichever comes next.
     */
    notProbed(apiKey: string): void {
      const held = keys.held.get(apiKey);
      if (held?.probe === "send") held.probedAt = options.now() - keys.probeEveryMs;
    },
    /** A send on `apiKey` went through: a hold on it is over. */
    async sent(apiKey: string): Promise<void> {
      const held = keys.held.get(apiKey);
      if (held) await release(keys, apiKey, held);
    },
    /**
     * Takes in what the other servers know of the key (every SHARED_HOLDS_MS at most): a hold
     * another server made is held here; one released by another server (after this one's
     * hold was recorded) is released here.
     */
    async look(apiKey: string): Promise<void> {
      if (!options.shared) return;
      const { held, readAt } = await options.shared.holds.fresh();
      const there = held.get(options.shared.tagOf(apiKey));
      const here = keys.held.get(apiKey);
      if (there && !here) adopt(keys, apiKey, there);
      else if (!there && here && readAt - here.since > SHARED_HOLDS_MS) {
        keys.held.delete(apiKey);
        options.log.info(`SMS gateway key ${maskSecret(apiKey)} works again (another server's probe): its messages go out now`);
      }
    },
    /** Keys held now (for status and doctor). */
    list(): (Hold & { apiKey: string })[] {
      return [...keys.held].map(([apiKey, h]) => ({ apiKey: maskSecret(apiKey), reason: h.reason, since: h.since, status: h.status }));
    },
  };
}

/** The holds of one process. */
interface Keys {
  options: KeyHoldsOptions;
  held: Map<string, Held>;
  probeEveryMs: number;
  remindEveryMs: number;
}

function hold(keys: Keys, apiKey: string, probe: Probe, error: GatewayError): void {
  const { options, probeEveryMs } = keys;
  const reason = errorMessage(error);
  const status = error.httpStatus ?? 0; // shown only: bridge status lists it
  const current = keys.held.get(apiKey);
  const t = options.now();
  if (current) {
    if (current.reason !== reason) tell(keys, () => options.record?.held(apiKey, { reason, status: current.status, since: current.since }));
    // A send probe refused: the next one in a probe's time.
    Object.assign(current, { reason, probe, probedAt: t });
    return;
  }
  keys.held.set(apiKey, { reason, status, since: t, probe, probedAt: t, remindedAt: t, probing: false });
  tell(keys, () => options.record?.held(apiKey, { reason, status, since: t }));
  options.log.error(`SMS gateway refused key ${maskSecret(apiKey)} (${reason}): its messages wait, not failed; an operator must act (top up, or set a working key). Probing it every ${probeEveryMs / 1000} s`);
}

/** A hold another server made: held here too, probed as the refusal its status tells calls for, not told again. */
function adopt(keys: Keys, apiKey: string, hold: Hold): void {
  const t = keys.options.now();
  const probe = probeOf(refusalKind(hold.status, undefined)) ?? "balance";
  keys.held.set(apiKey, { ...hold, probe, probedAt: t, remindedAt: t, probing: false });
  keys.options.log.info(`SMS gateway key ${maskSecret(apiKey)} is held by another server (${hold.reason}): its messages wait here too`);
}

function check(keys: Keys, apiKey: string): Hold | undefined {
  const held = keys.held.get(apiKey);
  if (!held) return undefined;
  const t = keys.options.now();
  if (t - held.remindedAt >= keys.remindEveryMs) {
    held.remindedAt = t;
    keys.options.log.error(`SMS gateway key ${maskSecret(apiKey)} still refused after ${Math.round((t - held.since) / 60_000)} min (${held.reason}); its messages wait`);
  }
  const due = !held.probing && t - held.probedAt >= keys.probeEveryMs;
  if (due && held.probe === "send") {
    held.probedAt = t;
    // One server probes a key: another's message waits, and asks for the key for the next probe.
    if (keys.options.ownsNow?.(apiKey) ?? true) return undefined;
    void keys.options.owns?.(apiKey);
    return held;
  }
  if (due) void probeBalance(keys, apiKey, held);
  return held;
}

async function probeBalance(keys: Keys, apiKey: string, held: Held): Promise<void> {
  held.probing = true;
  held.probedAt = keys.options.now();
  try {
    // One server probes a key: the others learn of the release from the database.
    if (keys.options.owns && !(await keys.options.owns(apiKey))) return;
    await keys.options.sms.balance(apiKey);
    await release(keys, apiKey, held);
  } catch (error) {
    // Still refused: the gateway's latest word is the reason; no answer, or another, says nothing of the key.
    if (stillRefused(error)) held.reason = errorMessage(error);
  } finally {
    held.probing = false;
  }
}

async function release(keys: Keys, apiKey: string, held: Hold): Promise<void> {
  const { options } = keys;
  if (keys.held.get(apiKey) !== held) return; // released meanwhile, by a probe of the other kind
  keys.held.delete(apiKey);
  tell(keys, () => options.record?.released(apiKey));
  options.log.info(`SMS gateway key ${maskSecret(apiKey)} works again after ${Math.round((options.now() - held.since) / 1000)} s: its messages go out now`);
  try {
    await options.wake?.();
  } catch (error) {
    options.log.warn(`held keys: messages not woken (${errorMessage(error)}); they look again within ${keys.probeEveryMs / 1000} s`);
  }
}

/** The record is for the operator's eyes: failing to write it must not stop a hold. */
function tell(keys: Keys, write: () => void): void {
  try {
    write();
  } catch (error) {
    keys.options.log.warn(`held keys: cannot record for bridge status: ${errorMessage(error)}`);
  }
}

export type KeyHolds = ReturnType<typeof createKeyHolds>;
