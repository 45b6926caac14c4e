import type { InboundStore } from "../../store/contract.ts";
import { errorMessage } from "../../errors.ts";
import type { Logger } from "../log.ts";
import { sleep } from "../retry.ts";
import { createBell } from "../bell.ts";

export interface InboundQueueOptions {
  store: InboundStore;
  /** Delivers one reply; it stores its own outcome. */
  deliver: (id: number) => Promise<void>;
  now: () => number;
  log: Logger;
  /** Longest sleep between looks (retries come due meanwhile). */
  pollMs?: number;
}

export type InboundQueue = ReturnType<typeof createInboundQueue>;

/**
 * The replies' in-process queue: one reply at a time, oldest first, and of one contact
 * only the first still waiting (the store's `due`), so a contact's replies reach the
 * conversation in the order they came, a retried one too. A new reply wakes it at once.
 * A reply a stopped process was posting is looked up in HighLevel before it is posted again.
 */
export function createInboundQueue(options: InboundQueueOptions) {
  const { store, log, now } = options;
  const pollMs = options.pollMs ?? 500;
  let running = false;
  let loop: Promise<void> | undefined;
  const bell = createBell();

  async function drain(): Promise<boolean> {
    const due = await store.due(now(), 16);
    for (const id of due) {
      if (!running) break;
      await options.deliver(id);
    }
    return due.length > 0;
  }

  async function run(): Promise<void> {
    while (running) {
      bell.clear();
      let more = false;
      try {
        more = await drain();
      } catch (error) {
        log.error(`inbound queue: ${errorMessage(error)}`); // the database refused a write: look again after a pause
      }
      if (more && !bell.rung()) continue;
      const next = await store.nextDue();
      await bell.sleep(next === undefined ? pollMs : Math.max(1, Math.min(pollMs, next - now())));
    }
  }

  return {
    /**
     * Starts the queue. `alone` (no other server on the store, as on SQLite): the replies a
     * stopped server was posting are looked up now; else once their hold has passed.
     */
    async start(alone = true): Promise<void> {
      if (running) return;
      const interrupted = alone ? await store.resumePosting(now()) : 0;
      if (interrupted > 0) log.warn(`${interrupted} reply(ies) were being posted to HighLevel when bridge stopped: each is looked up there before it is posted again`);
      running = true;
      loop = run();
    },
    /** A reply was committed or routed: look now. */
    notify(): void {
      bell.ring();
    },
    /** Stops after the reply in flight, waiting for it up to `graceMs`. */
    async stop(graceMs: number): Promise<void> {
      running = false;
      bell.ring();
      if (loop) await Promise.race([loop, sleep(graceMs)]);
    },
  };
}
