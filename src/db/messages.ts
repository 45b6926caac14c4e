import type { Db } from "./index.ts";
import { JOB_COLUMNS, jobFromRow, type Job, type JobRow } from "./job-rows.ts";
import { SENT_BY_PHONE, THROUGH_A_PHONE } from "./jobs-statements.ts";
import { createTimeline, type MessageEvent } from "./timeline.ts";
import { prepareUsageCount } from "./usage-count.ts";

/** A message's status as the operator sees it (docs/cli.md, "The message log"). */
export const MESSAGE_STATUSES = ["queued", "held", "sending", "on_phone", "sent", "delivered", "failed"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** One message of the log, as stored (times in ms since the epoch): its job, and what the operator sees of it. */
export interface LoggedMessage extends Job {
  status: MessageStatus;
  /** "cast" or "android". */
  gateway: string;
  /** The phone it went through (gateway "android"); null for Cast's. */
  deviceId: string | null;
  senderId: string | null;
  parts: number | null;
  reportedStatus: string | null;
  sentAt: number | null;
  receiptAt: number | null;
  reportedAt: number | null;
  updatedAt: number;
}

export type { MessageEvent } from "./timeline.ts";

export interface MessageFilter {
  locationId?: string;
  status?: MessageStatus;
  /** Received at or after this time. */
  since?: number;
  /** Only messages older than this one (the last of the previous page). */
  before?: { createdAt: number; id: number };
  limit: number;
}

/** Unfinished work of one location. */
export interface Backlog {
  locationId: string;
  waiting: number;
  /** When the oldest of them was received. */
  oldest: number;
}

/** A location's messages received since some time, as its settings page counts them. */
export interface Usage {
  messages: number;
  /** SMS parts of those sent so far. */
  parts: number;
  delivered: number;
  failed: number;
}

export type MessageLog = ReturnType<typeof createMessageLog>;

/**
 * The operator's derived status: a job's state, whether its key is held, and whether a
 * receipt is still awaited: `on_phone` while a phone holds it unsent (it took it Pending,
 * and has not said Sent since), `sent` once it left the gateway. One expression, so lists,
 * filters and counts agree.
 */
export const STATUS = `CASE
  WHEN state = 'queued' THEN CASE held WHEN 1 THEN 'held' ELSE 'queued' END
  WHEN state = 'sending' THEN 'sending'
  WHEN outcome = 'failed' THEN 'failed'
  WHEN receipt_deadline IS NOT NULL AND ${THROUGH_A_PHONE} AND NOT ${SENT_BY_PHONE} THEN 'on_phone'
  WHEN receipt_deadline IS NOT NULL THEN 'sent'
  ELSE 'delivered' END`;

/** What the log reads of a job, as a `MessageRow`. */
export const COLUMNS = `${JOB_COLUMNS}, ${STATUS} AS status, gateway, sender_id, parts, reported_status,
  receipt_at, reported_at, updated_at`;

export interface MessageRow extends JobRow {
  status: MessageStatus;
  gateway: string;
  sender_id: string | null;
  parts: number | null;
  reported_status: string | null;
  sent_at: number | null;
  receipt_at: number | null;
  reported_at: number | null;
  updated_at: number;
}

/*
 * The log's statements, written once for SQLite and PostgreSQL (src/store/postgres/messages.ts
 * numbers their `?`s): each `?` takes one value, in order.
 */
export const BY_MESSAGE_ID = `SELECT ${COLUMNS} FROM jobs WHERE message_id = ?`;
export const COUNTS = `SELECT ${STATUS} AS status, count(*) AS n FROM jobs GROUP BY 1`;
/** Locations with unfinished work, the longest waiting first; `text` orders a name as SQLite does (by its bytes). */
export const backlogSql = (text = (column: string) => column) => `
  SELECT location_id, count(*) AS waiting, min(created_at) AS oldest FROM jobs
  WHERE state IN ('queued', 'sending') GROUP BY location_id ORDER BY oldest, ${text("location_id")}`;
export const USAGE = `
  SELECT count(*) AS messages, coalesce(sum(parts), 0) AS parts,
    count(*) FILTER (WHERE status = 'delivered') AS delivered, count(*) FILTER (WHERE status = 'failed') AS failed
  FROM (SELECT ${STATUS} AS status, parts FROM jobs WHERE location_id = ? AND created_at >= ?) AS logged`;
export const RECEIVED_SINCE = `
  SELECT created_at FROM jobs WHERE location_id = ? AND created_at >= ? AND substr(message_id, 1, length(?)) = ?
  ORDER BY created_at`;
/** A settled job (its id) not changed since it was read (its updated_at then): the only kind requeued. */
export const UNCHANGED = "SELECT 1 FROM jobs WHERE id = ? AND updated_at = ? AND state IN ('done', 'dead')";
/** A settled job queued again as new at `now` (its placeholder): a fresh key, nothing counted or reported. */
export const requeueSql = (now: string) => `
  UPDATE jobs SET state = 'queued', outcome = NULL, error_code = NULL, error_message = NULL, attempts = 0,
    next_attempt_at = ${now}, idempotency_key = NULL, api_key_tag = NULL, first_sent_at = NULL, sender_id = NULL, gateway = 'cast',
    parts = NULL, receipt_deadline = NULL, receipt = NULL, receipt_at = NULL, sent_at = NULL, held = 0,
    reported_status = NULL, reported_at = NULL, requeued_at = ${now}, updated_at = ${now},
    usage_month = NULL, reserved_parts = 0, counted = 0`;

/** The page of the log `filter` asks for, newest first: its statement and values. */
export function listSql(filter: MessageFilter): { sql: string; params: unknown[] } {
  const { where, params } = conditions(filter);
  return { sql: `SELECT ${COLUMNS} FROM jobs ${where} ORDER BY created_at DESC, id DESC LIMIT ?`, params: [...params, filter.limit] };
}

export function backlogFromRow(row: { location_id: string; waiting: number; oldest: number }): Backlog {
  return { locationId: row.location_id, waiting: row.waiting, oldest: row.oldest };
}

/**
 * The message log over the jobs table: what the operator lists, shows and retries.
 * Newest first by the time a message was received (indexed, for one location or all).
 */
export function createMessageLog(db: Db) {
  const byMessageId = db.prepare<[string], MessageRow>(BY_MESSAGE_ID);
  const timeline = createTimeline(db);
  const counts = db.prepare<[], { status: MessageStatus; n: number }>(COUNTS);
  const backlog = db.prepare<[], { location_id: string; waiting: number; oldest: number }>(backlogSql());
  const requeueLogged = createRequeue(db, timeline);
  return {
    ...locationCounts(db),
    list(filter: MessageFilter): LoggedMessage[] {
      const { sql, params } = listSql(filter);
      return db.prepare<unknown[], MessageRow>(sql).all(...params).map(fromRow);
    },
    get(messageId: string): LoggedMessage | undefined {
      const row = byMessageId.get(messageId);
      return row && fromRow(row);
    },
    /** What happened to the message besides its columns: errors, holds, retries. */
    events(id: number): MessageEvent[] {
      return timeline.of(id);
    },
    /** How many messages of the log are in each status. */
    counts(): Record<MessageStatus, number> {
      const all = Object.fromEntries(MESSAGE_STATUSES.map((s) => [s, 0])) as Record<MessageStatus, number>;
      for (const { status, n } of counts.all()) all[status] = n;
      return all;
    },
    /** Each location with messages still to send, the longest waiting first. */
    backlog(): Backlog[] {
      return backlog.all().map(backlogFromRow);
    },
    /**
     * Queues a failed message again, as new: a fresh idempotency key, its hold time from
     * now. False when the job changed since `message` was read. The caller decides
     * whether it may be retried at all (core/operator/messages.ts).
     */
    requeue(message: LoggedMessage, now: number, detail: string): boolean {
      return requeueLogged(message, now, detail);
    },
  };
}

/** An operator's retry of a settled message: queued again as new, what it counted in usage taken back. */
function createRequeue(db: Db, timeline: ReturnType<typeof createTimeline>) {
  // Guarded by `updated_at`: a job the server changed since the operator's look is left alone.
  const requeue = db.prepare<{ id: number; now: number; seen: number }>(`${requeueSql("@now")} WHERE id = @id AND updated_at = @seen AND state IN ('done', 'dead')`);
  const unchanged = db.prepare<[number, number], number>(UNCHANGED).pluck();
  const usage = prepareUsageCount(db);
  // What it counted in usage is taken back with it: it counts again as it settles anew.
  return db.transaction((message: LoggedMessage, now: number, detail: string): boolean => {
    if (unchanged.get(message.id, message.updatedAt) === undefined) return false;
    usage.unsettled(message.id);
    requeue.run({ id: message.id, now, seen: message.updatedAt });
    timeline.add(message.id, now, "requeued", detail);
    return true;
  });

}

/** What the settings page counts of its location's messages. */
function locationCounts(db: Db) {
  const usage = db.prepare<[string, number], Usage>(USAGE);
  const receivedSince = db.prepare<[string, number, string, string], number>(RECEIVED_SINCE).pluck();
  return {
    /** The location's messages received at or after `since`, by what became of them. */
    usage(locationId: string, since: number): Usage {
      return usage.get(locationId, since) ?? { messages: 0, parts: 0, delivered: 0, failed: 0 };
    },
    /** When each of the location's messages whose id starts with `prefix` was received, at or after `since`, the oldest first. */
    receivedSince(locationId: string, since: number, prefix: string): number[] {
      return receivedSince.all(locationId, since, prefix, prefix);
    },
  };
}

function conditions(filter: MessageFilter): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.locationId !== undefined) {
    clauses.push("location_id = ?");
    params.push(filter.locationId);
  }
  if (filter.status !== undefined) {
    clauses.push(`${STATUS} = ?`);
    params.push(filter.status);
  }
  if (filter.since !== undefined) {
    clauses.push("created_at >= ?");
    params.push(filter.since);
  }
  if (filter.before !== undefined) {
    clauses.push("(created_at, id) < (?, ?)");
    params.push(filter.before.createdAt, filter.before.id);
  }
  return { where: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/** The one reading of a message log's row, on either database. */
export function fromRow(row: MessageRow): LoggedMessage {
  return {
    ...jobFromRow(row),
    status: row.status,
    // A phone's is stored as its key, `android:<device id>` (Claim.gateway).
    gateway: row.gateway.startsWith("android:") ? "android" : row.gateway,
    deviceId: row.gateway.startsWith("android:") ? row.gateway.slice("android:".length) : null,
    senderId: row.sender_id,
    parts: row.parts,
    reportedStatus: row.reported_status,
    sentAt: row.sent_at,
    receiptAt: row.receipt_at,
    reportedAt: row.reported_at,
    updatedAt: row.updated_at,
  };
}
