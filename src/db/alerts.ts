import type { Db } from "./index.ts";
import { ms } from "./ms.ts";

/** Why an alert was sent: a condition started, still holds (hourly), ended; or `bridge alerts test`. */
export type AlertKind = "started" | "repeat" | "ended" | "test";

/** One alert to a person, kept until the webhook took it. */
export interface Alert {
  id: number;
  /** The condition's stable key, e.g. `hold:<key tag>` or `outage:cast`; "test" for a test. */
  condition: string;
  kind: AlertKind;
  text: string;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
}

/** A condition an alert was raised for and not yet cleared. */
export interface OpenCondition {
  condition: string;
  /** What the condition is, in a few words: the "ended" alert names it. */
  title: string;
  startedAt: number;
  /** The last alert that said so: started, or its latest hourly repeat. */
  repeatedAt: number;
}

/** The alert channel as `bridge status` and doctor show it. */
export interface AlertHealth {
  waiting: number;
  /** When the webhook last took an alert; null: never. */
  lastDeliveredAt: number | null;
  /** The latest failed delivery, if any, and when; null when the latest try went through. */
  lastError: string | null;
  lastErrorAt: number | null;
}

export type AlertStore = ReturnType<typeof createAlertStore>;

/** A row of `alerts` as read (the PostgreSQL store reads the same row). */
export interface AlertRow {
  id: number;
  condition: string;
  kind: AlertKind;
  text: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
}

/**
 * The `alerts` and `alert_conditions` tables: serve's evaluator opens and closes
 * conditions and records the alerts that say so, in one transaction each; the sender
 * takes the oldest waiting alert; `bridge status` reads the channel's health.
 */
export function createAlertStore(db: Db) {
  const s = statements(db);
  const insert = (condition: string, kind: AlertKind, text: string, at: number): number =>
    Number(s.insert.run({ condition, kind, text, at: ms(at) }).lastInsertRowid);
  return {
    /** The conditions alerted as started and not yet ended. */
    open(): OpenCondition[] {
      return s.open.all().map((r) => ({ condition: r.condition, title: r.title, startedAt: r.started_at, repeatedAt: r.repeated_at }));
    },
    /** A condition, there `since`, is alerted at `at`: it is open, and its alert waits to be sent. */
    start: db.transaction((condition: string, title: string, text: string, at: number, since = at): void => {
      s.openCondition.run({ condition, title, since: ms(since), at: ms(at) });
      insert(condition, "started", text, at);
    }),
    /** A condition alerted while the database refused to keep it: open from now on, no second alert. */
    adopt(condition: string, title: string, startedAt: number): void {
      s.openCondition.run({ condition, title, since: ms(startedAt), at: ms(startedAt) });
    },
    /** A condition still holds: its hourly reminder waits to be sent. */
    repeat: db.transaction((condition: string, text: string, at: number): void => {
      s.repeated.run({ condition, at: ms(at) });
      insert(condition, "repeat", text, at);
    }),
    /** A condition is over: closed, and its alert waits to be sent. */
    end: db.transaction((condition: string, text: string, at: number): void => {
      s.closeCondition.run(condition);
      insert(condition, "ended", text, at);
    }),
    ...createQueue(s),
    health(): AlertHealth {
      const h = s.health.get();
      const failedLast = h?.error_at != null && (h.delivered_at == null || h.error_at > h.delivered_at);
      return {
        waiting: h?.waiting ?? 0,
        lastDeliveredAt: h?.delivered_at ?? null,
        lastError: failedLast ? (h?.error ?? null) : null,
        lastErrorAt: failedLast ? (h?.error_at ?? null) : null,
      };
    },
  };
}

/** The alerts as the alert loop takes them: the oldest waiting first, until delivered. */
function createQueue(s: ReturnType<typeof statements>) {
  return {
    /** An alert of `condition` still waits to be sent: a reminder would only queue behind it. */
    waiting(condition: string): boolean {
      return s.waitingOf.get(condition) !== undefined;
    },
    /** A test alert (`bridge alerts test`), recorded as sent or waiting. */
    test(text: string, at: number, delivered: boolean): number {
      const id = Number(s.insert.run({ condition: "test", kind: "test", text, at: ms(at) }).lastInsertRowid);
      if (delivered) s.delivered.run({ id, at: ms(at) });
      return id;
    },
    /** The oldest alert still waiting, due or not: alerts go in the order they were made. */
    next(): Alert | undefined {
      const r = s.next.get();
      return r && { id: r.id, condition: r.condition, kind: r.kind, text: r.text, createdAt: r.created_at, attempts: r.attempts, nextAttemptAt: r.next_attempt_at };
    },
    delivered(id: number, at: number): void {
      s.delivered.run({ id, at: ms(at) });
    },
    /** A try failed: the alert (and those behind it) waits until `retryAt`. */
    failed(id: number, error: string, at: number, retryAt: number): void {
      s.failed.run({ id, error, at: ms(at), retry: ms(retryAt) });
    },
    /** Forgets the alerts delivered before `before`: what waits is never forgotten. */
    prune(before: number): number {
      return s.prune.run(ms(before)).changes;
    },
  };
}

function statements(db: Db) {
  return {
    open: db.prepare<[], { condition: string; title: string; started_at: number; repeated_at: number }>("SELECT * FROM alert_conditions ORDER BY started_at"),
    openCondition: db.prepare<[{ condition: string; title: string; since: number; at: number }]>(
      "INSERT OR REPLACE INTO alert_conditions (condition, title, started_at, repeated_at) VALUES (@condition, @title, @since, @at)",
    ),
    repeated: db.prepare<[{ condition: string; at: number }]>("UPDATE alert_conditions SET repeated_at = @at WHERE condition = @condition"),
    closeCondition: db.prepare<[string]>("DELETE FROM alert_conditions WHERE condition = ?"),
    insert: db.prepare<[{ condition: string; kind: AlertKind; text: string; at: number }]>(
      "INSERT INTO alerts (condition, kind, text, created_at, next_attempt_at) VALUES (@condition, @kind, @text, @at, @at)",
    ),
    waitingOf: db.prepare<[string], { id: number }>("SELECT id FROM alerts WHERE delivered_at IS NULL AND condition = ? LIMIT 1"),
    next: db.prepare<[], AlertRow>("SELECT * FROM alerts WHERE delivered_at IS NULL ORDER BY id LIMIT 1"),
    delivered: db.prepare<[{ id: number; at: number }]>("UPDATE alerts SET delivered_at = @at, attempts = attempts + 1, last_attempt_at = @at WHERE id = @id"),
    failed: db.prepare<[{ id: number; error: string; at: number; retry: number }]>(
      "UPDATE alerts SET attempts = attempts + 1, last_error = @error, last_attempt_at = @at, next_attempt_at = @retry WHERE id = @id",
    ),
    prune: db.prepare<[number]>("DELETE FROM alerts WHERE delivered_at IS NOT NULL AND delivered_at < ?"),
    health: db.prepare<[], { waiting: number; delivered_at: number | null; error: string | null; error_at: number | null }>(`
      SELECT (SELECT count(*) FROM alerts WHERE delivered_at IS NULL) AS waiting,
        (SELECT max(delivered_at) FROM alerts) AS delivered_at,
        (SELECT last_error FROM alerts WHERE last_error IS NOT NULL ORDER BY last_attempt_at DESC LIMIT 1) AS error,
        (SELECT max(last_attempt_at) FROM alerts WHERE last_error IS NOT NULL) AS error_at`),
  };
}
