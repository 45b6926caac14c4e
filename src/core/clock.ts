/**
 * bridge's two clocks, both in ms since the epoch; the one place core reads the system's time.
 *
 * The business clock is the context's `now` (`createCore`'s `now`, `systemNow` unless one is
 * injected): a message's deadlines, a hold's age, the log's and usage's times. Integration tests
 * skew it (`bridgePerTest({ now })`).
 *
 * The wall clock is real elapsed time: rate budgets, timers and pauses, Retry-After, waits for a
 * lease or a code exchange, outages' durations. It is never skewed, so a test that moves the
 * business clock by a day still waits real milliseconds.
 */
export const wallClock = (): number => Date.now();

/** The business clock when none is injected: the system's time. */
export const systemNow = (): number => Date.now();
