import type { Job, Result } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import type { ReadUnsubscribed, Unsubscribed } from "../clients/cast-unsubscribed.ts";
import type { Gateways, SendRequest } from "../clients/gateway.ts";
import { optOutKey } from "../opt-out-list.ts";
import type { Logger } from "../log.ts";
import { maskPhone, maskSecret } from "../mask.ts";
import { sleep } from "../retry.ts";

/** What a message to an opted-out number fails with, and HighLevel is told (docs/cli.md, "Opt-outs"). */
export const OPTED_OUT = "recipient opted out";

/**
 * How long a key's copy of Cast's unsubscribed list is used before it is read again.
 * Cast itself blocks a send from a sender ID to a number that unsubscribed from it (its
 * docs, "Generate Unsubscribe Link"): a copy minutes old costs no unwanted SMS, only a
 * clear "recipient opted out" a little later. Each read is one request of Cast's
 * per-address budget (30 a second, shared with every send and poll): one per key every
 * five minutes is nothing to it.
 */
export const UNSUBSCRIBED_FRESH_MS = 5 * 60_000;
/** After a failed read the key's messages go without the list (Cast still blocks) until this has passed. */
export const UNSUBSCRIBED_RETRY_MS = 60_000;

/** Cast's unsubscribed lists, one per API key (its account), kept a while. */
export interface UnsubscribedLists {
  /**
   * Whether `phone` unsubscribed from `senderId` on the key's account. "" (the account's
   * default sender ID, which bridge does not know): from any of its sender IDs. False
   * when the list cannot be read: a failed read never stops a send.
   */
  listed(apiKey: string, senderId: string, phone: string): Promise<boolean>;
  /**
   * `listed` without waiting: a number, the key's list is being read (its first read, off
   * the caller's path) and this is the ms to look again; a send holds no worker meanwhile.
   */
  check(apiKey: string, senderId: string, phone: string): boolean | number;
}

/** While a key's first read is under way, its messages look again this often. */
export const UNSUBSCRIBED_LOOK_MS = 100;

export interface UnsubscribedDeps {
  read: ReadUnsubscribed;
  /** 0 when a read may go now (a request of Cast's per-address budget taken); else the ms to wait (Scheduler.tryPoll). */
  tryRead?: () => number;
  log: Logger;
  now: () => number;
  freshMs?: number;
  retryMs?: number;
}

export function createUnsubscribedLists(deps: UnsubscribedDeps): UnsubscribedLists {
  const freshMs = deps.freshMs ?? UNSUBSCRIBED_FRESH_MS;
  const retryMs = deps.retryMs ?? UNSUBSCRIBED_RETRY_MS;
  // One read per key at a time: the sends that wait for it share it.
  const kept = new Map<string, { until: number; numbers: Promise<Numbers | undefined> }>();
  // What each key's last read found, for `check` (a key absent: never read yet).
  const found = new Map<string, Numbers | undefined>();
  // Keys whose last read failed: the failure is logged once, not at every send.
  const failing = new Set<string>();

  async function read(apiKey: string): Promise<Numbers | undefined> {
    try {
      // A read spends Cast's per-address budget like a receipt poll: it waits its turn.
      for (let wait = deps.tryRead?.() ?? 0; wait > 0; wait = deps.tryRead?.() ?? 0) await sleep(wait);
      const numbers = byNumber(await deps.read(apiKey));
      if (failing.delete(apiKey)) deps.log.info(`Cast's unsubscribed list of key ${maskSecret(apiKey)} is read again`);
      kept.set(apiKey, { until: deps.now() + freshMs, numbers: Promise.resolve(numbers) });
      found.set(apiKey, numbers);
      return numbers;
    } catch (error) {
      const log = failing.has(apiKey) ? deps.log.debug : deps.log.warn;
      failing.add(apiKey);
      log(`Cast's unsubscribed list of key ${maskSecret(apiKey)} could not be read (${errorMessage(error)}): its messages go without it (Cast blocks the numbers on it itself); read again in ${retryMs / 1000} s`);
      kept.set(apiKey, { until: deps.now() + retryMs, numbers: Promise.resolve(undefined) });
      found.set(apiKey, undefined);
      return undefined;
    }
  }

  function current(apiKey: string): Promise<Numbers | undefined> {
    const copy = kept.get(apiKey);
    if (copy && copy.until > deps.now()) return copy.numbers;
    const numbers = read(apiKey);
    kept.set(apiKey, { until: Number.POSITIVE_INFINITY, numbers });
    return numbers;
  }

  return {
    async listed(apiKey, senderId, phone) {
      return on(await current(apiKey), senderId, phone);
    },
    check(apiKey, senderId, phone) {
      // A list due again is read again meanwhile; until then its last copy serves.
      void current(apiKey);
      return found.has(apiKey) ? on(found.get(apiKey), senderId, phone) : UNSUBSCRIBED_LOOK_MS;
    },
  };
}

function on(numbers: Numbers | undefined, senderId: string, phone: string): boolean {
  const senders = numbers?.get(optOutKey(phone));
  if (!senders) return false;
  return senderId === "" || senders.has(senderId.toUpperCase());
}

/** Each unsubscribed number (keyed as the opt-out lists are) and the sender IDs, upper case, it left. */
type Numbers = Map<string, Set<string>>;

function byNumber(entries: Unsubscribed[]): Numbers {
  const numbers: Numbers = new Map();
  for (const { phone, senderId } of entries) {
    const key = optOutKey(phone);
    numbers.set(key, (numbers.get(key) ?? new Set()).add(senderId.toUpperCase()));
  }
  return numbers;
}

type Plan = { request: SendRequest } | { result: Result };

/**
 * A send whose number is on Cast's unsubscribed list for its sender ID fails here, before
 * the gateway call, as one on the location's own list does (`opted_out`). The list is
 * Cast's, read where it is kept, never copied onto the location's: it is lifted in Cast.
 * `waitMs`: the key's list is not read yet; the job looks again then.
 */
export function unlessUnsubscribed<P extends Plan>(
  deps: { unsubscribed?: UnsubscribedLists; log: Logger; sms: Pick<Gateways, "driverOf"> },
  job: Job,
  plan: P,
): P | { result: Result } | { waitMs: number } {
  if (!("request" in plan) || !deps.unsubscribed) return plan;
  const { apiKey, senderId, to } = plan.request;
  // A phone sends with its SIM, not a Cast account: Cast's list is not its list.
  if (!deps.sms.driverOf(apiKey).account.unsubscribedList) return plan;
  const listed = deps.unsubscribed.check(apiKey, senderId, to);
  // The list is being read: the job stays queued and looks again, holding no worker.
  if (typeof listed === "number") return { waitMs: listed };
  if (!listed) return plan;
  const { messageId, locationId } = job.message;
  const sender = senderId || "the account's default";
  deps.log.info(`message ${messageId} of location ${locationId}: ${maskPhone(optOutKey(to))} is on Cast's unsubscribed list for sender ID ${sender}`);
  return { result: { outcome: "failed", errorCode: "opted_out", errorMessage: OPTED_OUT } };
}
