import type { Alert, AlertHealth, CapStanding, OpenCondition, UsageFilter, UsageRow } from "./types.ts";

/** What each location used per month, and the monthly caps (docs/usage.md). Counting itself is the job store's: it happens as a message settles. */
export interface UsageStore {
  /** Usage rows by month, then location, then gateway. */
  list(filter: UsageFilter): Promise<UsageRow[]>;
  /** The location's monthly cap of SMS parts; undefined: none. */
  capOf(locationId: string): Promise<number | undefined>;
  /** Sets (a number) or removes (null) the location's monthly cap; false when no such location is stored. */
  setCap(locationId: string, cap: number | null, now: number): Promise<boolean>;
  /** Parts of the location's month taken: settled, and reserved by sends not settled yet. */
  used(locationId: string, month: string): Promise<number>;
  /** The locations with a cap whose month's use is at or over `percent` % of it: a cap of 0 is reached at once. */
  atOrOver(month: string, percent: number): Promise<CapStanding[]>;
}

/** Alerts to a person, kept until delivered, and the conditions they were raised for (docs/alerts.md). */
export interface AlertStore {
  /** The conditions alerted as started and not yet ended. */
  open(): Promise<OpenCondition[]>;
  /** A condition, there `since`, is alerted at `at`: it is open, and its alert waits to be sent. */
  start(condition: string, title: string, text: string, at: number, since?: number): Promise<void>;
  /** A condition alerted while the database refused to keep it: open from now on, no second alert. */
  adopt(condition: string, title: string, startedAt: number): Promise<void>;
  /** A condition still holds: its hourly reminder waits to be sent. */
  repeat(condition: string, text: string, at: number): Promise<void>;
  /** A condition is over: closed, and its alert waits to be sent. */
  end(condition: string, text: string, at: number): Promise<void>;
  health(): Promise<AlertHealth>;
  /** An alert of `condition` still waits to be sent: a reminder would only queue behind it. */
  waiting(condition: string): Promise<boolean>;
  /** A test alert (`bridge alerts test`), recorded as sent or waiting; its id. */
  test(text: string, at: number, delivered: boolean): Promise<number>;
  /** The oldest alert still waiting, due or not: alerts go in the order they were made. */
  next(): Promise<Alert | undefined>;
  delivered(id: number, at: number): Promise<void>;
  /** A try failed: the alert (and those behind it) waits until `retryAt`. */
  failed(id: number, error: string, at: number, retryAt: number): Promise<void>;
  /** Forgets the alerts delivered before `before`: what waits is never forgotten; how many. */
  prune(before: number): Promise<number>;
}
