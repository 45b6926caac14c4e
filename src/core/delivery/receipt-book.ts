import type { DeliveryStatus } from "../clients/gateway.ts";
import { FRESH_MS, plan, type KeyLog, type Reads } from "./receipt-reads.ts";
import type { ReceiptBookOptions, Waiting } from "./receipt-types.ts";

export { isFinal } from "./receipt-reads.ts";
export type { ReceiptBookOptions, Waiting } from "./receipt-types.ts";

/**
 * What the key's log says of a waiting message: its status as of the last read; "ask":
 * the log cannot tell (its read fails, or it did not list the message), so ask for the
 * message alone; undefined: not read yet (the book wakes the job when its receipt is read).
 */
export type Look = { status: DeliveryStatus } | "ask" | undefined;

/** A message read past but not listed is asked for alone once it is this old. */
const ASK_ALONE_AFTER_MS = 60_000;

/**
 * Receipts in batches (docs/architecture.md, "Receipts"; docs/services/cast-api.md): per API key, one reader pages
 * through `/api/v1/sms/logs` from the newest entry back to the key's oldest waiting send,
 * every few seconds while anything waits, so one pass serves every waiting message of
 * the key, however many there are. Jobs look here when they are due (`look`); a pass
 * that reads a final receipt wakes its job. Driven by the messages that wait: a key
 * with none is not read, nor one whose gateway pushes its receipts and keeps no log (a
 * phone's): its messages are asked for alone. The reads themselves are receipt-reads.ts.
 */
export function createReceiptBook(options: ReceiptBookOptions) {
  const { now } = options;
  const r: Reads = { options, freshMs: options.freshMs ?? FRESH_MS, stopped: false, lagMs: 0, told: { pageSize: false, clock: false } };
  const keys = new Map<string, KeyLog>();

  function keyLog(apiKey: string): KeyLog {
    let k = keys.get(apiKey);
    if (!k) keys.set(apiKey, (k = { waiting: new Map(), statuses: new Map(), reading: false, readAt: -Infinity, pages: 0, awaited: 0 }));
    return k;
  }

  return {
    /** What the key's log says of `waiting`; registers it, so the key's reads look for it. */
    look(apiKey: string, waiting: Waiting): Look {
      if (options.sourceOf?.(apiKey) === "pushed") return "ask";
      const k = keyLog(apiKey);
      const known = k.waiting.get(waiting.messageId);
      const t = now();
      if (known) known.lookedAt = t;
      else k.waiting.set(waiting.messageId, { ...waiting, lookedAt: t, woken: false, missed: false, asking: false });
      plan(r, apiKey, k);
      const status = k.statuses.get(waiting.messageId);
      if (status) return { status };
      if (known?.asking) return "ask";
      // A read went past it without finding it (or not far enough back): the log cannot tell.
      if (known?.missed && t - waiting.sentAt > ASK_ALONE_AFTER_MS) return "ask";
      return undefined;
    },
    /** The message's status as the key's last read found it, if it did. */
    statusOf(apiKey: string, messageId: string): DeliveryStatus | undefined {
      return keys.get(apiKey)?.statuses.get(messageId);
    },
    /** The message's receipt settled it: no read looks for it again. */
    settled(apiKey: string, messageId: string): void {
      const k = keys.get(apiKey);
      k?.waiting.delete(messageId);
      k?.statuses.delete(messageId);
    },
    /** No further reads (the process stops). */
    stop(): void {
      r.stopped = true;
      for (const k of keys.values()) clearTimeout(k.timer);
    },
  };
}

export type ReceiptBook = ReturnType<typeof createReceiptBook>;
