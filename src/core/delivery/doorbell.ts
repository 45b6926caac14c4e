/**
 * The queue worker's doorbell. Whoever commits work the worker should take now (a webhook's
 * job, a receipt that makes a report due, a test SMS) rings it; the worker, made after the
 * core around it (src/core/run.ts), listens. Rung with no one listening, it does nothing.
 */
export function createDoorbell() {
  const listeners: Array<() => void> = [];
  return {
    ring(): void {
      for (const listener of listeners) listener();
    },
    listen(listener: () => void): void {
      listeners.push(listener);
    },
  };
}

export type Doorbell = ReturnType<typeof createDoorbell>;
