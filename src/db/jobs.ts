import type { Db } from "./index.ts";

/** What a webhook asks us to send, as stored with its job. */
export interface OutboundMessage {
  messageId: string;
  locationId: string;
  contactId: string;
  phone: string;
  message: string;
  attachments: string[];
}

export type JobState = "queued" | "sending" | "reporting" | "done" | "dead";
export type Outcome = "delivered" | "failed";

export interface Job {
  id: number;
  state: JobState;
  message: OutboundMessage;
  outcome: Outcome | null;
  errorCode: string | null;
  errorMessage: string | null;
  gatewayMessageId: string | null;
  attempts: number;
}

export interface Result {
  outcome: Outcome;
  errorCode?: string;
  errorMessage?: string;
  gatewayMessageId?: string;
}

export type JobStore = ReturnType<typeof createJobStore>;

interface Row {
  id: number;
  state: JobState;
  payload: string;
  outcome: Outcome | null;
  error_code: string | null;
  error_message: string | null;
  gateway_message_id: string | null;
  attempts: number;
}

/**
 * The durable work queue. A job moves queued -> sending -> reporting -> done, and
 * each move is committed before the work it announces, so after a crash we know
 * which SMS may already have left (state "sending"). Each write is one statement, run
 * through the group commit (commit.ts); only the recovery at start-up commits on its own.
 */
export function createJobStore(db: Db) {
  const remember = db.prepare<[string]>("INSERT INTO seen_messages (message_id) VALUES (?) ON CONFLICT DO NOTHING");
  const insert = db.prepare<[string, string, string, number, number, number]>(`
    INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`);
  // Two statements, all or nothing (a savepoint inside the group commit): an id
  // remembered without its job would turn HighLevel's retry into a lost message.
  const enqueue = db.transaction((message: OutboundMessage, now: number): boolean => {
    if (remember.run(message.messageId).changes === 0) return false;
    return insert.run(message.messageId, message.locationId, JSON.stringify(message), now, now, now).changes > 0;
  });
  const due = db.prepare<[number, number], Row>(`
    SELECT * FROM jobs WHERE state IN ('queued', 'reporting') AND next_attempt_at <= ?
    ORDER BY next_attempt_at, id LIMIT ?`);
  const toSending = db.prepare<[number, number]>(`
    UPDATE jobs SET state = 'sending', attempts = attempts + 1, updated_at = ? WHERE id = ? AND state = 'queued'`);
  const toReporting = db.prepare<[{ id: number; now: number } & Required<Omit<Result, "outcome">> & Pick<Result, "outcome">]>(`
    UPDATE jobs SET state = 'reporting', outcome = @outcome, error_code = nullif(@errorCode, ''),
      error_message = nullif(@errorMessage, ''), gateway_message_id = nullif(@gatewayMessageId, ''),
      attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE id = @id`);
  const setState = db.prepare<[JobState, number, number]>("UPDATE jobs SET state = ?, updated_at = ? WHERE id = ?");
  const retryLater = db.prepare<[number, string, number, number]>(`
    UPDATE jobs SET next_attempt_at = ?, attempts = attempts + 1, error_message = coalesce(error_message, ?), updated_at = ?
    WHERE id = ?`);
  const interrupted = db.prepare<[{ now: number }]>(`
    UPDATE jobs SET state = 'reporting', outcome = 'failed', error_code = 'delivery_unknown',
      error_message = 'delivery unknown after restart', attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE state = 'sending'`);
  const byMessage = db.prepare<[string], Row>("SELECT * FROM jobs WHERE message_id = ?");
  const counts = db.prepare<[], { state: JobState; n: number }>("SELECT state, count(*) AS n FROM jobs GROUP BY state");
  const prune = db.prepare<[number, number]>(`
    DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'dead') AND updated_at < ? LIMIT ?)`);

  return {
    /**
     * Adds a new job; false when this messageId was seen before, however long ago (its
     * job may be pruned; its id is remembered). Run inside the group commit's transaction.
     */
    enqueue(message: OutboundMessage, now: number): boolean {
      return enqueue(message, now);
    },
    due(now: number, limit: number): Job[] {
      return due.all(now, limit).map(fromRow);
    },
    /** Marks the job as being sent. Committed before the gateway call; false if another worker took it. */
    claimForSending(id: number, now: number): boolean {
      return toSending.run(now, id).changes > 0;
    },
    recordResult(id: number, result: Result, now: number): void {
      toReporting.run({
        id,
        now,
        outcome: result.outcome,
        errorCode: result.errorCode ?? "",
        errorMessage: result.errorMessage ?? "",
        gatewayMessageId: result.gatewayMessageId ?? "",
      });
    },
    finish(id: number, state: "done" | "dead", now: number): void {
      setState.run(state, now, id);
    },
    retryLater(id: number, at: number, reason: string, now: number): void {
      retryLater.run(at, reason, now, id);
    },
    /** Jobs a crash caught mid-send: reported failed, never resent (the SMS may have gone). */
    recoverInterrupted(now: number): number {
      return interrupted.run({ now }).changes;
    },
    get(messageId: string): Job | undefined {
      const row = byMessage.get(messageId);
      return row && fromRow(row);
    },
    counts(): Partial<Record<JobState, number>> {
      return Object.fromEntries(counts.all().map((r) => [r.state, r.n]));
    },
    /** Deletes up to `limit` finished jobs (done, dead) last changed before `before`; how many it deleted. */
    prune(before: number, limit: number): number {
      return prune.run(before, limit).changes;
    },
  };
}

function fromRow(row: Row): Job {
  return {
    id: row.id,
    state: row.state,
    message: JSON.parse(row.payload) as OutboundMessage,
    outcome: row.outcome,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    gatewayMessageId: row.gateway_message_id,
    attempts: row.attempts,
  };
}
