import type { AlertStore } from "../../store/contract.ts";
import type { Alert } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import { createBell } from "../bell.ts";
import type { AlertPost } from "../clients/alert-webhook.ts";
import type { Logger } from "../log.ts";
import { delayMs, RETRY } from "../retry.ts";

/** With nothing waiting, the sender looks again this often anyway (the evaluator rings it sooner). */
const IDLE_MS = 60_000;

export interface SenderOptions {
  store: Pick<AlertStore, "next" | "delivered" | "failed">;
  /** Posts one text to ALERT_WEBHOOK_URL (clients/alert-webhook.ts). */
  post: (text: string) => Promise<AlertPost>;
  log: Logger;
  now: () => number;
  /** First wait after a failed post (tests shorten it); doubles up to RETRY.alert's most. */
  firstBackoffMs?: number;
  /** Whether this server posts now: on a shared database only the leader does; the others look again in LEADS_MS. */
  leads?: () => boolean;
}

/** A server that does not lead looks this often whether it does now (the leader's lease is renewed every 5 s). */
const LEADS_MS = 5_000;

/**
 * The alert loop: posts the oldest waiting alert, one at a time and in order, and marks
 * it delivered only once the webhook took it. A failed post waits RETRY.alert's back-off
 * (a 429, at least its Retry-After) before the same alert is tried again, and those behind
 * it wait with it. Its own loop with its own client and timeout: a slow or dead webhook
 * holds only this loop, never a send. Alerts the database refused to keep (`unstored`)
 * go first, from memory.
 */
export function createSender(options: SenderOptions) {
  const bell = createBell();
  const post = createPoster(options);
  let running = false;
  let loop: Promise<void> | undefined;

  async function run(): Promise<void> {
    while (running) {
      let wait: number;
      try {
        wait = options.leads?.() === false ? LEADS_MS : await post.once();
      } catch (error) {
        options.log.warn(`alerts: ${errorMessage(error)}`);
        wait = delayMs(RETRY.alert, 0, options.firstBackoffMs);
      }
      if (running) await bell.sleep(Math.max(1, Math.min(wait, IDLE_MS)));
    }
  }

  return {
    /** An alert was recorded (or, `text`, could be kept only in memory): look now. */
    wake(text?: string): void {
      if (text !== undefined) post.unstored.push(text);
      bell.ring();
    },
    start(): void {
      if (running) return;
      running = true;
      loop = run();
    },
    /** Stops looking; a post in flight is left to its timeout, its alert still waiting. */
    async stop(): Promise<void> {
      running = false;
      bell.ring();
      await Promise.race([loop, new Promise((resolve) => setTimeout(resolve, 100).unref())]);
    },
  };
}

/** One look of the alert loop: the alert due, posted, and how long until the next look. */
function createPoster(options: SenderOptions) {
  const { store, log, now } = options;
  const unstored: string[] = [];
  let unstoredFailures = 0;
  const backoff = (attempts: number, post: Extract<AlertPost, { ok: false }>): number =>
    Math.max(post.retryAfterMs ?? 0, delayMs(RETRY.alert, Math.max(0, attempts - 1), options.firstBackoffMs));

  async function sendUnstored(text: string): Promise<number> {
    const post = await options.post(text);
    if (post.ok) {
      unstored.shift();
      unstoredFailures = 0;
      return 0;
    }
    unstoredFailures++;
    log.warn(`alerts: the webhook did not take an alert (${post.reason}); trying again`);
    return backoff(unstoredFailures, post);
  }

  async function send(alert: Alert): Promise<number> {
    const post = await options.post(alert.text);
    if (post.ok) {
      await store.delivered(alert.id, now());
      return 0;
    }
    const wait = backoff(alert.attempts + 1, post);
    await store.failed(alert.id, post.reason, now(), now() + wait);
    log.warn(`alerts: the webhook did not take an alert (${post.reason}); it waits, next try in ${Math.ceil(wait / 1000)} s`);
    return wait;
  }

  return {
    /** Alerts the database refused to keep: they go first, from memory. */
    unstored,
    /** Sends what is due; returns how long to sleep before the next look. */
    async once(): Promise<number> {
      const first = unstored[0];
      if (first !== undefined) return sendUnstored(first);
      const alert = await store.next();
      if (!alert) return IDLE_MS;
      const due = alert.nextAttemptAt - now();
      return due > 0 ? due : send(alert);
    },
  };
}
