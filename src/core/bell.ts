/** A sleep that a ring cuts short; a ring while awake is kept, so the next sleep does not start. */
export function createBell() {
  let wake: (() => void) | undefined;
  let rung = false;
  return {
    clear: (): void => void (rung = false),
    rung: (): boolean => rung,
    ring(): void {
      rung = true;
      wake?.();
    },
    /** Sleeps up to `ms`, or not at all when rung since the last sleep; either way the ring is spent. */
    async sleep(ms: number): Promise<void> {
      if (rung) {
        rung = false;
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
      rung = false;
    },
  };
}
