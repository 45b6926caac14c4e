import type { SmsGateway } from "./clients/gateway.ts";
import { GatewayError, errorMessage } from "../errors.ts";
import type { Logger } from "./log.ts";
import { maskSecret } from "./mask.ts";

export interface KeyHoldsOptions {
  sms: SmsGateway;
  log: Logger;
  now: () => number;
  /** How often a held key is probed (the balance call). */
  probeEveryMs?: number;
  /** How often the operator is reminded while a key is held. */
  remindEveryMs?: number;
  /** Told of each hold and release, so that other processes (`bridge status`) see them. */
  record?: { held(apiKey: string, hold: Hold): void; released(apiKey: string): void };
  /** A key works again: its waiting messages should look now, not at their next look. */
  wake?: () => void;
}

export interface Hold {
  /** What the gateway said: the reason a message held too long is failed with. */
  reason: string;
  since: number;
  /** 402: out of credit; resumes only once the balance is above 0. */
  status: number;
}

/**
 * Account problems hold, they don't burn the queue (CONTRACT.md 5.6). A 401, 402 or 403
 * from Cast stops sending on that API key: its messages wait, the operator is told at
 * once and every few minutes, and the key is probed with the balance call at most once
 * a minute, driven by the messages that wait for it; sending resumes by itself when a
 * probe succeeds. Held in memory: after a restart, the next send finds out again.
 */
export function createKeyHolds(options: KeyHoldsOptions) {
  const { sms, log, now } = options;
  const probeEveryMs = options.probeEveryMs ?? 60_000;
  const remindEveryMs = options.remindEveryMs ?? 5 * 60_000;
  const held = new Map<string, Hold & { probedAt: number; remindedAt: number; probing: boolean }>();

  async function probe(apiKey: string, hold: Hold & { probedAt: number; probing: boolean }): Promise<void> {
    hold.probing = true;
    hold.probedAt = now();
    try {
      const credits = await sms.balance(apiKey);
      if (hold.status === 402 && credits <= 0) return;
      held.delete(apiKey);
      tell(() => options.record?.released(apiKey));
      wake();
      log.info(`SMS gateway key ${maskSecret(apiKey)} works again after ${Math.round((now() - hold.since) / 1000)} s: its messages go out now`);
    } catch (error) {
      if (error instanceof GatewayError && error.httpStatus) hold.reason = errorMessage(error);
    } finally {
      hold.probing = false;
    }
  }

  function wake(): void {
    try {
      options.wake?.();
    } catch (error) {
      log.warn(`held keys: messages not woken (${errorMessage(error)}); they look again within ${probeEveryMs / 1000} s`);
    }
  }

  /** The record is for the operator's eyes: failing to write it must not stop a hold. */
  function tell(write: () => void): void {
    try {
      write();
    } catch (error) {
      log.warn(`held keys: cannot record for bridge status: ${errorMessage(error)}`);
    }
  }

  return {
    /** How long a held key's messages wait before they look again: by then a probe is due (a release wakes them sooner). */
    lookAgainMs: probeEveryMs,
    /** The gateway refused the key itself: hold its messages. */
    hold(apiKey: string, status: number, reason: string): void {
      const current = held.get(apiKey);
      if (current) {
        if (current.reason !== reason) tell(() => options.record?.held(apiKey, { ...current, reason }));
        current.reason = reason;
        return;
      }
      const t = now();
      held.set(apiKey, { reason, status, since: t, probedAt: t, remindedAt: t, probing: false });
      tell(() => options.record?.held(apiKey, { reason, status, since: t }));
      log.error(`SMS gateway refused key ${maskSecret(apiKey)} (${reason}): its messages wait, not failed; an operator must act (top up, or set a working key). Probing it every ${probeEveryMs / 1000} s`);
    },
    /** The hold on `apiKey`, if any; starts a probe, or reminds the operator, when one is due. */
    check(apiKey: string): Hold | undefined {
      const hold = held.get(apiKey);
      if (!hold) return undefined;
      const t = now();
      if (!hold.probing && t - hold.probedAt >= probeEveryMs) void probe(apiKey, hold);
      if (t - hold.remindedAt >= remindEveryMs) {
        hold.remindedAt = t;
        log.error(`SMS gateway key ${maskSecret(apiKey)} still refused after ${Math.round((t - hold.since) / 60_000)} min (${hold.reason}); its messages wait`);
      }
      return hold;
    },
    /** Keys held now (for status and doctor). */
    list(): (Hold & { apiKey: string })[] {
      return [...held].map(([apiKey, h]) => ({ apiKey: maskSecret(apiKey), reason: h.reason, since: h.since, status: h.status }));
    },
  };
}

export type KeyHolds = ReturnType<typeof createKeyHolds>;
