import { sqlCode, type FailureCode } from "./failures.ts";
import type { Db } from "./index.ts";
import { ms } from "./ms.ts";
import { createTimeline, INSERT_EVENT } from "./timeline.ts";

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
  errorCode: FailureCode | null;
  errorMessage: string | null;
  gatewayMessageId: string | null;
  attempts: number;
  /** The X-Idempotency-Key of every attempt at this send; null before the first. */
  idempotencyKey: string | null;
  /** When the first attempt went out; null before it. */
  firstSentAt: number | null;
  /** Which API key the attempts used (a hash of it); null before the first. */
  apiKeyTag: string | null;
  /** Until then the carrier's receipt is awaited before the report; null: not awaited. */
  receiptDeadline: number | null;
  /** The carrier's final word, or "none" when none came in time. */
  receipt: string | null;
  /** When the webhook was accepted. */
  createdAt: number;
  /** When an operator queued it again after it failed; null if never. */
  requeuedAt: number | null;
  /** Waiting because the gateway refused its API key. */
  held: boolean;
  /** An attempt got no clear answer (or a crash cut it off): its SMS may have left under the idempotency key. */
  unclear: boolean;
}

/** A due job as the queue sees it before it runs one: no payload read yet. */
export interface DueJob {
  id: number;
  state: JobState;
  locationId: string;
  /** 1 for each location's first due job, 2 for its second, … */
  turn: number;
}

/** What the carrier's receipt (or its absence) settles. */
export interface Receipt {
  outcome: Outcome;
  receipt: string;
  errorCode?: FailureCode;
  errorMessage?: string;
}

/** What a send attempt is committed with before it leaves. */
export interface Claim {
  idempotencyKey: string;
  apiKeyTag: string;
  /** The sender ID it goes with ("" : the gateway's default), for the message log. */
  senderId?: string;
}

export interface Result {
  outcome: Outcome;
  errorCode?: FailureCode;
  errorMessage?: string;
  gatewayMessageId?: string;
  /** SMS parts, as the gateway counted them. */
  parts?: number;
}

/** Why a send goes back to the queue: each is recorded in the message log differently. */
export interface SendLater {
  /** A refusal that proves nothing was ever sent under the job's key: the next attempt takes a fresh one. */
  freshKey?: boolean;
  /** The gateway refused the API key itself: the message is held, not failed. */
  held?: boolean;
  /** No clear answer: the SMS may have left (an operator may then never retry it). */
  unclear?: boolean;
}

export type JobStore = ReturnType<typeof createJobStore>;

interface Row {
  id: number;
  state: JobState;
  payload: string;
  outcome: Outcome | null;
  error_code: FailureCode | null;
  error_message: string | null;
  gateway_message_id: string | null;
  attempts: number;
  idempotency_key: string | null;
  first_sent_at: number | null;
  api_key_tag: string | null;
  receipt_deadline: number | null;
  receipt: string | null;
  created_at: number;
  requeued_at: number | null;
  held: number;
  unclear: number;
}

/**
 * The durable work queue. A job moves queued -> sending -> reporting -> done, and
 * each move is committed before the work it announces, so after a crash we know
 * which SMS may already have left (state "sending"). Each write is one statement, run
 * through the group commit (commit.ts); only the recovery at start-up commits on its own.
 * Every time it writes goes through ms(): whole milliseconds, whatever the caller computed.
 */
export function createJobStore(db: Db) {
  const timeline = createTimeline(db);
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
  // The locations with unfinished jobs, one index seek each (a skip scan): a backlog of
  // thousands in one location costs no more to look past than one job. With each, when
  // its earliest send and report are due (a seek each too): a location whose jobs all
  // wait (receipts to check later, say) costs no look of its own.
  const waitingLocations = db.prepare<[], { location_id: string; sends_at: number | null; reports_at: number | null }>(`
    WITH RECURSIVE next(location_id) AS (
      SELECT min(location_id) FROM jobs WHERE state IN ('queued', 'reporting')
      UNION ALL
      SELECT (SELECT min(location_id) FROM jobs WHERE state IN ('queued', 'reporting') AND location_id > next.location_id)
      FROM next WHERE next.location_id IS NOT NULL
    ) SELECT location_id,
      (SELECT min(next_attempt_at) FROM jobs INDEXED BY jobs_due_by_location
        WHERE location_id = next.location_id AND state IN ('queued', 'reporting') AND state = 'queued') AS sends_at,
      (SELECT min(next_attempt_at) FROM jobs INDEXED BY jobs_due_by_location
        WHERE location_id = next.location_id AND state IN ('queued', 'reporting') AND state = 'reporting') AS reports_at
    FROM next WHERE location_id IS NOT NULL`);
  const dueOf = db.prepare<[string, JobState, number, number], { id: number; state: JobState; next_attempt_at: number }>(`
    SELECT id, state, next_attempt_at FROM jobs INDEXED BY jobs_due_by_location
    WHERE location_id = ? AND state IN ('queued', 'reporting') AND state = ? AND next_attempt_at <= ?
    ORDER BY next_attempt_at, id LIMIT ?`);
  // The key, the first attempt's time and the API key's tag are set once: every retry reuses them.
  const toSending = db.prepare<[{ id: number; now: number; key: string | null; tag: string | null; sender: string | null }]>(`
    UPDATE jobs SET state = 'sending', attempts = attempts + 1, updated_at = @now, held = 0,
      sender_id = coalesce(@sender, sender_id),
      idempotency_key = coalesce(idempotency_key, @key), api_key_tag = coalesce(api_key_tag, @tag),
      first_sent_at = CASE WHEN @key IS NULL THEN first_sent_at ELSE coalesce(first_sent_at, @now) END
    WHERE id = @id AND state = 'queued'`);
  const sendLater = db.prepare<[{ id: number; at: number; reason: string; now: number; fresh: number; held: number; unclear: number }]>(`
    UPDATE jobs SET state = 'queued', next_attempt_at = @at, error_message = @reason, updated_at = @now,
      idempotency_key = CASE WHEN @fresh THEN NULL ELSE idempotency_key END,
      api_key_tag = CASE WHEN @fresh THEN NULL ELSE api_key_tag END,
      first_sent_at = CASE WHEN @fresh THEN NULL ELSE first_sent_at END,
      held = @held, unclear = max(unclear, @unclear)
    WHERE id = @id AND state = 'sending'`);
  const lastReason = db.prepare<[number], string | null>("SELECT error_message FROM jobs WHERE id = ?").pluck();
  const heldNow = db.prepare<[number], number>("SELECT held FROM jobs WHERE id = ? AND state = 'queued'").pluck();
  const markHeld = db.prepare<[{ id: number; reason: string; at: number; now: number }]>(`
    UPDATE jobs SET held = 1, error_message = @reason, next_attempt_at = @at, updated_at = @now WHERE id = @id AND state = 'queued'`);
  const hold = db.transaction((id: number, reason: string, at: number, now: number) => {
    if (heldNow.get(id) !== 0) return markHeld.run({ id, reason, at, now });
    markHeld.run({ id, reason, at, now });
    timeline.add(id, now, "held", reason);
  });
  // Through the index of unfinished jobs, not the whole table of finished ones.
  const wakeHeld = db.prepare<[{ now: number }]>(`
    UPDATE jobs INDEXED BY jobs_due_by_location SET next_attempt_at = @now
    WHERE state IN ('queued', 'reporting') AND state = 'queued' AND held = 1 AND next_attempt_at > @now`);
  // A wait is logged when its reason changes, not at every try of a long outage.
  const queueAgain = db.transaction((id: number, at: number, reason: string, now: number, how: SendLater) => {
    const before = lastReason.get(id);
    const flags = { fresh: how.freshKey ? 1 : 0, held: how.held ? 1 : 0, unclear: how.unclear ? 1 : 0 };
    if (sendLater.run({ id, at, reason, now, ...flags }).changes === 0) return;
    if (before !== reason) timeline.add(id, now, how.held ? "held" : "retry", reason);
  });
  // Absent codes, messages and ids come as "" (stored NULL): named parameters must all be bound.
  const toReporting = db.prepare<
    [
      { id: number; now: number; at: number; deadline: number | null; parts: number | null; outcome: Outcome } & {
        errorCode: FailureCode | "";
        errorMessage: string;
        gatewayMessageId: string;
      },
    ]
  >(`
    UPDATE jobs SET state = 'reporting', outcome = @outcome, error_code = nullif(@errorCode, ''),
      error_message = nullif(@errorMessage, ''), gateway_message_id = nullif(@gatewayMessageId, ''),
      attempts = 0, next_attempt_at = @at, updated_at = @now, receipt_deadline = @deadline, held = 0,
      sent_at = CASE WHEN @gatewayMessageId <> '' THEN @now END, parts = coalesce(@parts, parts),
      unclear = max(unclear, @errorCode IN (${sqlCode("gateway_unknown")}, ${sqlCode("delivery_unknown")}))
    WHERE id = @id`);
  const record = db.transaction((row: Parameters<typeof toReporting.run>[0]) => {
    toReporting.run(row);
    if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", describe(row.errorCode, row.errorMessage));
  });
  const receiptLater = db.prepare<[number, number, number]>("UPDATE jobs SET next_attempt_at = ?, updated_at = ? WHERE id = ?");
  // Only a job still waiting for its receipt: one already settled keeps its own schedule.
  const receiptDue = db.prepare<[{ id: number; now: number }]>(`
    UPDATE jobs SET next_attempt_at = @now
    WHERE id = @id AND state = 'reporting' AND receipt_deadline IS NOT NULL AND next_attempt_at > @now`);
  const receiptsDue = db.transaction((ids: number[], now: number) => {
    for (const id of ids) receiptDue.run({ id, now });
  });
  const toReceipt = db.prepare<[{ id: number; now: number; outcome: Outcome; receipt: string; errorCode: FailureCode | ""; errorMessage: string }]>(`
    UPDATE jobs SET outcome = @outcome, receipt = @receipt, receipt_deadline = NULL, receipt_at = @now,
      error_code = coalesce(nullif(@errorCode, ''), error_code), error_message = coalesce(nullif(@errorMessage, ''), error_message),
      attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE id = @id`);
  const settle = db.transaction((row: Parameters<typeof toReceipt.run>[0]) => {
    toReceipt.run(row);
    if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", describe(row.errorCode, row.errorMessage));
  });
  const reported = db.prepare<[{ id: number; status: string; now: number }]>(`
    UPDATE jobs SET state = 'done', reported_status = @status, reported_at = @now, updated_at = @now WHERE id = @id`);
  const setDead = db.prepare<[number, number]>("UPDATE jobs SET state = 'dead', updated_at = ? WHERE id = ?");
  const giveUp = db.transaction((id: number, now: number, reason: string) => {
    setDead.run(now, id);
    timeline.add(id, now, "report_failed", `status not reported: ${reason}`);
  });
  const retryLater = db.prepare<[number, string, number, number]>(`
    UPDATE jobs SET next_attempt_at = ?, attempts = attempts + 1, error_message = coalesce(error_message, ?), updated_at = ?
    WHERE id = ?`);
  const reportLater = db.transaction((id: number, at: number, reason: string, now: number) => {
    retryLater.run(at, reason, now, id);
    if (timeline.last(id, "report_retry") !== reason) timeline.add(id, now, "report_retry", reason);
  });
  const noteError = db.transaction((id: number, reason: string, now: number) => {
    if (timeline.last(id, "error") !== reason) timeline.add(id, now, "error", reason);
  });
  // Caught mid-send by a crash: with a key Cast still remembers, the same send again is
  // safe (a replay if it went); without one (a job of an older bridge), its fate is unknown.
  const resumable = "state = 'sending' AND idempotency_key IS NOT NULL AND first_sent_at >= @since";
  const logResumed = db.prepare<[{ now: number; since: number }]>(`
    ${INSERT_EVENT}
    SELECT id, @now, 'restart', 'bridge stopped during the send: sent again with the same idempotency key' FROM jobs WHERE ${resumable}`);
  const resumeInterrupted = db.prepare<[{ now: number; since: number }]>(`
    UPDATE jobs SET state = 'queued', next_attempt_at = @now, updated_at = @now, unclear = 1 WHERE ${resumable}`);
  const stillSending = db.prepare<[], { messageId: string; locationId: string }>(
    "SELECT message_id AS messageId, location_id AS locationId FROM jobs WHERE state = 'sending'",
  );
  const logInterrupted = db.prepare<[{ now: number }]>(`
    ${INSERT_EVENT}
    SELECT id, @now, 'failed', '${describe("delivery_unknown", UNKNOWN_AFTER_RESTART)}' FROM jobs WHERE state = 'sending'`);
  const interrupted = db.prepare<[{ now: number }]>(`
    UPDATE jobs SET state = 'reporting', outcome = 'failed', error_code = ${sqlCode("delivery_unknown")}, unclear = 1,
      error_message = '${UNKNOWN_AFTER_RESTART}', attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE state = 'sending'`);
  const recover = db.transaction((now: number, since: number) => {
    logResumed.run({ now, since });
    const resumed = resumeInterrupted.run({ now, since }).changes;
    const failed = stillSending.all();
    logInterrupted.run({ now });
    interrupted.run({ now });
    return { resumed, failed };
  });
  const byMessage = db.prepare<[string], Row>("SELECT * FROM jobs WHERE message_id = ?");
  const byId = db.prepare<[number], Row>("SELECT * FROM jobs WHERE id = ?");
  const counts = db.prepare<[], { state: JobState; n: number }>("SELECT state, count(*) AS n FROM jobs GROUP BY state");
  const oldestQueued = db.prepare<[], { at: number | null }>("SELECT min(created_at) AS at FROM jobs WHERE state = 'queued'");
  const prune = db.prepare<[number, number]>(`
    DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'dead') AND updated_at < ? LIMIT ?)`);

  return {
    /**
     * Adds a new job; false when this messageId was seen before, however long ago (its
     * job may be pruned; its id is remembered). Run inside the group commit's transaction.
     */
    enqueue(message: OutboundMessage, now: number): boolean {
      return enqueue(message, ms(now));
    },
    /** Due jobs in turns between locations; `turn` 1 is each location's first. */
    /**
     * Due jobs in turns between locations: each location's first, then each one's second,
     * and so on, so a location's backlog (a bulk campaign) never stands between another
     * and its turn. `waiting`: locations whose sends wait for a budget; only their reports
     * are read now.
     */
    due(now: number, limit: number, waiting?: (locationId: string) => boolean): DueJob[] {
      const locations = waitingLocations.all();
      const each = Math.ceil(limit / Math.max(1, locations.length)) + 1;
      const isDue = (at: number | null) => at !== null && at <= now;
      const rows = locations.flatMap(({ location_id: locationId, sends_at, reports_at }) => {
        const reports = isDue(reports_at) ? dueOf.all(locationId, "reporting", now, each) : [];
        const sends = isDue(sends_at) && !waiting?.(locationId) ? dueOf.all(locationId, "queued", now, each) : [];
        return [...reports, ...sends]
          .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
          .slice(0, each)
          .map(({ id, state, next_attempt_at }, i) => ({ id, state, locationId, turn: i + 1, at: next_attempt_at }));
      });
      rows.sort((a, b) => a.turn - b.turn || a.at - b.at || a.id - b.id);
      return rows.slice(0, limit).map(({ id, state, locationId, turn }) => ({ id, state, locationId, turn }));
    },
    /** The whole job, to run it. */
    byId(id: number): Job | undefined {
      const row = byId.get(id);
      return row && fromRow(row);
    },
    /**
     * Marks the job as being sent, with the attempt's idempotency key (kept from the first
     * attempt on). Committed before the gateway call; false if another worker took it.
     * No claim: nothing goes to the gateway (the job is failed without a send).
     */
    claimForSending(id: number, now: number, claim?: Claim): boolean {
      const row = { id, now: ms(now), key: claim?.idempotencyKey ?? null, tag: claim?.apiKeyTag ?? null, sender: claim?.senderId ?? null };
      return toSending.run(row).changes > 0;
    },
    /**
     * Queued again for `at`: with the same idempotency key after an unclear answer; with
     * `freshKey` after a refusal that proves nothing was ever sent under the old key (Cast
     * keeps a refused send's answer under its key too, so the old key could only be refused again).
     */
    sendLater(id: number, at: number, reason: string, now: number, how: SendLater = {}): void {
      queueAgain(id, ms(at), reason, ms(now), how);
    },
    /** The send's result; with `receipt`, the report waits for the carrier's receipt (first look at `receipt.at`). */
    recordResult(id: number, result: Result, now: number, receipt?: { at: number; deadline: number }): void {
      record({
        id,
        now: ms(now),
        at: ms(receipt?.at ?? now),
        deadline: receipt ? ms(receipt.deadline) : null,
        outcome: result.outcome,
        errorCode: result.errorCode ?? "",
        errorMessage: result.errorMessage ?? "",
        gatewayMessageId: result.gatewayMessageId ?? "",
        parts: result.parts ?? null,
      });
    },
    /**
     * Waits on a key the gateway refused until `at`: shown as held, with `reason`. Out of
     * the queue's way meanwhile, so it takes no turn from reports or from other keys' sends.
     */
    markHeld(id: number, reason: string, at: number, now: number): void {
      hold(id, reason, ms(at), ms(now));
    },
    /** A held key works again: its messages (every held one, in fact) are due now. */
    wakeHeld(now: number): number {
      return wakeHeld.run({ now: ms(now) }).changes;
    },
    /** No final receipt yet: look again at `at`. */
    receiptLater(id: number, at: number, now: number): void {
      receiptLater.run(ms(at), ms(now), id);
    },
    /** A read of the log found these jobs' receipts: they look again now. */
    receiptsDue(ids: number[], now: number): void {
      receiptsDue(ids, ms(now));
    },
    /** The receipt settled the outcome (or none came in time): the report goes next. */
    recordReceipt(id: number, receipt: Receipt, now: number): void {
      settle({ id, now: ms(now), errorCode: "", errorMessage: "", ...receipt });
    },
    /** HighLevel took the status: the job is done. */
    reported(id: number, status: string, now: number): void {
      reported.run({ id, status, now: ms(now) });
    },
    /** The status report is given up (`reason`): the job is dead. */
    giveUp(id: number, now: number, reason: string): void {
      giveUp(id, ms(now), reason);
    },
    /** The status report failed for `reason`: try again at `at`. */
    retryLater(id: number, at: number, reason: string, now: number): void {
      reportLater(id, ms(at), reason, ms(now));
    },
    /** A run of the job threw `reason`: on its timeline once, until the reason changes. */
    noteError(id: number, reason: string, now: number): void {
      noteError(id, reason, ms(now));
    },
    /**
     * Jobs a crash caught mid-send: sent again with their key when it was first used
     * after `since` (Cast still remembers it); else reported failed, never resent.
     */
    recoverInterrupted(now: number, since: number): { resumed: number; failed: { messageId: string; locationId: string }[] } {
      return recover(ms(now), ms(since));
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
      return prune.run(ms(before), limit).changes;
    },
    /** When the oldest job still waiting to be sent was accepted; undefined when none waits. */
    oldestQueuedAt(): number | undefined {
      return oldestQueued.get()?.at ?? undefined;
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
    idempotencyKey: row.idempotency_key,
    firstSentAt: row.first_sent_at,
    apiKeyTag: row.api_key_tag,
    receiptDeadline: row.receipt_deadline,
    receipt: row.receipt,
    createdAt: row.created_at,
    requeuedAt: row.requeued_at,
    held: row.held === 1,
    unclear: row.unclear === 1,
  };
}

export type { EventKind } from "./timeline.ts";

const UNKNOWN_AFTER_RESTART = "delivery unknown after restart";

function describe(code: FailureCode | "", message: string): string {
  return code ? `${code}: ${message}` : message;
}
