import { sqlCode, type FailureCode } from "./failures.ts";
import type { Db } from "./index.ts";
import { JOB_COLUMNS, type JobRow, type JobState, type Outcome } from "./job-rows.ts";
import { INSERT_EVENT } from "./timeline.ts";

export type JobStatements = ReturnType<typeof prepareJobStatements>;

/**
 * The job store's statements (jobs.ts), each named for the store's method that runs it.
 * Absent codes, messages and ids are bound as "" (stored NULL): a named parameter must be bound.
 */
export function prepareJobStatements(db: Db) {
  return { ...queueStatements(db), ...sendStatements(db), ...settleStatements(db), ...recoveryStatements(db) };
}

/** A failure as its timeline entry says it. */
export function failureDetail(code: FailureCode | "", message: string): string {
  return code ? `${code}: ${message}` : message;
}

/** A job whose receipt is still awaited: the only one a receipt may settle. */
export const AWAITS_RECEIPT = "state = 'reporting' AND receipt_deadline IS NOT NULL";

/** A job sent through a phone: its gateway is the phone's key, `android:<device id>` (Claim.gateway). */
/** The messages of a key waiting for their receipt (store: awaitingReceipts); `?`/`$n` placeholders: the tag, the limit. */
export const AWAITING_RECEIPTS = (tag: string, limit: string) => `
  SELECT id AS "jobId", gateway_message_id AS "messageId", coalesce(sent_at, first_sent_at, updated_at) AS "sentAt",
    message_id AS "crmMessageId", location_id AS "locationId"
  FROM jobs WHERE ${AWAITS_RECEIPT} AND api_key_tag = ${tag} AND gateway_message_id IS NOT NULL ORDER BY id LIMIT ${limit}`;

/** A report due (a settled job whose report is not taken): `?`/`$n` placeholders: until, the id, now. */
export const TAKE_REPORT = (until: string, id: string, now: string) => `
  UPDATE jobs SET next_attempt_at = ${until} WHERE id = ${id} AND state = 'reporting' AND receipt_deadline IS NULL AND next_attempt_at <= ${now}`;

export const THROUGH_A_PHONE = "gateway LIKE 'android:%'";

/** A phone's message the phone has said it sent (the carrier took it): a "sent" event on its timeline. */
export const SENT_BY_PHONE = "EXISTS (SELECT 1 FROM job_events WHERE job_id = jobs.id AND kind = 'sent')";

/** What the timeline says of a job's steps, in the same words on every store. */
export const JOB_TEXTS = {
  /** A send a crash cut off, sent again under its key. */
  resumed: "bridge stopped during the send: sent again with the same idempotency key",
  /** A send a crash cut off, without a key its gateway still remembers. */
  unknownAfterRestart: "delivery unknown after restart",
  /** A claim under a fresh key. */
  fresh: "no earlier attempt reached the gateway: sent with the API key configured now, under a new idempotency key",
  sentByPhone: (how: string) => `by the phone: the carrier took it (${how})`,
  notReported: (reason: string) => `status not reported: ${reason}`,
} as const;

/**
 * Caught mid-send by a crash: with a key its gateway still remembers (the cutoff of its
 * gateway's kind, the kind of `gateway` before any `:`), the same send again is safe (a
 * replay if it went); without one (a job of an older bridge, or past it), its fate is unknown.
 */
function recoveryStatements(db: Db) {
  const kind = "CASE WHEN instr(gateway, ':') > 0 THEN substr(gateway, 1, instr(gateway, ':') - 1) ELSE gateway END";
  // @servers: a JSON array of the servers whose sends these are (run_by), or null for any server's.
  const of = "(@servers IS NULL OR run_by IN (SELECT value FROM json_each(@servers)))";
  const resumable = `state = 'sending' AND idempotency_key IS NOT NULL AND ${kind} = @kind AND first_sent_at >= @since AND ${of}`;
  return {
    logResumed: db.prepare<[{ now: number; since: number; kind: string; servers: string | null }]>(`
    ${INSERT_EVENT}
    SELECT id, @now, 'restart', '${JOB_TEXTS.resumed}' FROM jobs WHERE ${resumable}`),
    resumeInterrupted: db.prepare<[{ now: number; since: number; kind: string; servers: string | null }]>(`
    UPDATE jobs SET state = 'queued', next_attempt_at = @now, updated_at = @now, unclear = 1 WHERE ${resumable}`),
    stillSending: db.prepare<[{ servers: string | null }], { messageId: string; locationId: string }>(
      `SELECT message_id AS messageId, location_id AS locationId FROM jobs WHERE state = 'sending' AND ${of}`,
    ),
    logInterrupted: db.prepare<[{ now: number; servers: string | null }]>(`
    ${INSERT_EVENT}
    SELECT id, @now, 'failed', '${failureDetail("delivery_unknown", JOB_TEXTS.unknownAfterRestart)}' FROM jobs WHERE state = 'sending' AND ${of}`),
    failInterrupted: db.prepare<[{ now: number; servers: string | null }]>(`
    UPDATE jobs SET state = 'reporting', outcome = 'failed', error_code = ${sqlCode("delivery_unknown")}, unclear = 1,
      error_message = '${JOB_TEXTS.unknownAfterRestart}', attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE state = 'sending' AND ${of}`),
  };
}

/** A job in, the due ones out, reads, the finished ones gone (jobs-queue.ts, jobs.ts). */
function queueStatements(db: Db) {
  return {
    remember: db.prepare<[string]>("INSERT INTO seen_messages (message_id) VALUES (?) ON CONFLICT DO NOTHING"),
    enqueue: db.prepare<[string, string, string, number, number, number]>(`
    INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`),
    // The locations with due-able jobs, two index seeks each (a skip scan over each state's
    // index): a backlog of thousands in one location costs no more to look past than one
    // job. With each, when its earliest send and its earliest report are due (a seek each
    // in that state's own index, which holds no row of the other state): a location whose
    // jobs all wait (receipts to check later, say) costs no look of its own.
    waitingLocations: db.prepare<[], { location_id: string; sends_at: number | null; reports_at: number | null }>(`
    WITH RECURSIVE next(location_id) AS (
      SELECT ${firstLocation(">= ''")}
      UNION ALL
      SELECT ${firstLocation("> next.location_id")} FROM next WHERE next.location_id IS NOT NULL
    ) SELECT location_id,
      (SELECT min(next_attempt_at) FROM jobs INDEXED BY jobs_sends_due WHERE location_id = next.location_id AND state = 'queued') AS sends_at,
      (SELECT min(next_attempt_at) FROM jobs INDEXED BY jobs_reports_due WHERE location_id = next.location_id AND state = 'reporting') AS reports_at
    FROM next WHERE location_id IS NOT NULL`),
    dueSends: dueIn(db, "queued", "jobs_sends_due"),
    dueReports: dueIn(db, "reporting", "jobs_reports_due"),
    get: db.prepare<[string], JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE message_id = ?`),
    byId: db.prepare<[number], JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`),
    counts: db.prepare<[], { state: JobState; n: number }>("SELECT state, count(*) AS n FROM jobs GROUP BY state"),
    oldestQueuedAt: db.prepare<[], { at: number | null }>("SELECT min(created_at) AS at FROM jobs WHERE state = 'queued'"),
    prune: db.prepare<[number, number]>(`
    DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'dead') AND updated_at < ? LIMIT ?)`),
  };
}

/**
 * The first location (its id `from`, say "> next.location_id") with a job queued or
 * reporting: the lesser of each state's index's first (min() skips a state that has none).
 */
function firstLocation(from: string): string {
  return `(SELECT min(location_id) FROM (
    SELECT (SELECT min(location_id) FROM jobs INDEXED BY jobs_sends_due WHERE state = 'queued' AND location_id ${from}) AS location_id
    UNION ALL
    SELECT (SELECT min(location_id) FROM jobs INDEXED BY jobs_reports_due WHERE state = 'reporting' AND location_id ${from})))`;
}

/** A location's due jobs in one state, earliest first, read from that state's own index. */
function dueIn(db: Db, state: "queued" | "reporting", index: string) {
  return db.prepare<[string, number, number], { id: number; next_attempt_at: number }>(`
    SELECT id, next_attempt_at FROM jobs INDEXED BY ${index}
    WHERE location_id = ? AND state = '${state}' AND next_attempt_at <= ?
    ORDER BY next_attempt_at, id LIMIT ?`);
}

/** A send's steps (jobs-send.ts). */
function sendStatements(db: Db) {
  return {
    // The key, the first attempt's time, the API key's tag and the gateway are set once: every
    // retry reuses them, unless @fresh (none of the attempts reached the gateway: they start anew).
    claimForSending: db.prepare<[{ id: number; now: number; key: string | null; tag: string | null; sender: string | null; fresh: number; gateway: string }]>(`
    UPDATE jobs SET state = 'sending', attempts = attempts + 1, updated_at = @now, held = 0,
      sender_id = coalesce(@sender, sender_id),
      gateway = CASE WHEN (@fresh OR api_key_tag IS NULL) AND @tag IS NOT NULL THEN @gateway ELSE gateway END,
      idempotency_key = CASE WHEN @fresh THEN @key ELSE coalesce(idempotency_key, @key) END,
      api_key_tag = CASE WHEN @fresh THEN @tag ELSE coalesce(api_key_tag, @tag) END,
      first_sent_at = CASE WHEN @key IS NULL THEN first_sent_at WHEN @fresh THEN @now ELSE coalesce(first_sent_at, @now) END
    WHERE id = @id AND state = 'queued'`),
    sendLater: db.prepare<[{ id: number; at: number; reason: string; now: number; fresh: number; held: number; unclear: number }]>(`
    UPDATE jobs SET state = 'queued', next_attempt_at = @at, error_message = @reason, updated_at = @now,
      idempotency_key = CASE WHEN @fresh THEN NULL ELSE idempotency_key END,
      api_key_tag = CASE WHEN @fresh THEN NULL ELSE api_key_tag END,
      first_sent_at = CASE WHEN @fresh THEN NULL ELSE first_sent_at END,
      held = @held, unclear = max(unclear, @unclear)
    WHERE id = @id AND state = 'sending'`),
    // Sent, but the gateway proved it never went (a phone's send limit): queued again as new, under a fresh key.
    sendAgain: db.prepare<[{ id: number; at: number; reason: string; now: number }]>(`
    UPDATE jobs SET state = 'queued', next_attempt_at = @at, error_message = @reason, updated_at = @now, attempts = 0,
      outcome = NULL, error_code = NULL, gateway_message_id = NULL, receipt_deadline = NULL, sent_at = NULL, parts = NULL,
      idempotency_key = NULL, api_key_tag = NULL, first_sent_at = NULL, unclear = 0, held = 0
    WHERE id = @id AND state = 'reporting' AND receipt_deadline IS NOT NULL`),
    lastReason: db.prepare<[number], string | null>("SELECT error_message FROM jobs WHERE id = ?").pluck(),
    heldNow: db.prepare<[number], number>("SELECT held FROM jobs WHERE id = ? AND state = 'queued'").pluck(),
    markHeld: db.prepare<[{ id: number; reason: string; at: number; now: number }]>(`
    UPDATE jobs SET held = 1, error_message = @reason, next_attempt_at = @at, updated_at = @now WHERE id = @id AND state = 'queued'`),
    // Through the index of queued jobs, not the whole table of finished ones.
    wakeHeld: db.prepare<[{ now: number }]>(`
    UPDATE jobs INDEXED BY jobs_sends_due SET next_attempt_at = @now
    WHERE state = 'queued' AND held = 1 AND next_attempt_at > @now`),
    recordResult: db.prepare<
      [
        { id: number; now: number; at: number; deadline: number | null; parts: number | null; outcome: Outcome; month: string } & {
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
      usage_month = coalesce(usage_month, @month),
      unclear = max(unclear, @errorCode IN (${sqlCode("gateway_unknown")}, ${sqlCode("delivery_unknown")}))
    WHERE id = @id AND state IN ('queued', 'sending')`),
  };
}

/**
 * A receipt's and a report's steps (jobs-settle.ts). A receipt is stored only while it is
 * awaited: a late status event, or a look that raced one, changes nothing settled.
 */
function settleStatements(db: Db) {
  return {
    // Only a job still waiting for its receipt: a webhook may have settled it while the look was out.
    receiptLater: db.prepare<[number, number, number]>(`UPDATE jobs SET next_attempt_at = ?, updated_at = ? WHERE id = ? AND ${AWAITS_RECEIPT}`),
    wasSentByPhone: db.prepare<[number], number>(`SELECT 1 FROM jobs WHERE id = ? AND ${SENT_BY_PHONE}`).pluck(),
    sentByPhone: db.prepare<[{ id: number; now: number; detail: string }]>(`
    ${INSERT_EVENT} SELECT id, @now, 'sent', @detail FROM jobs
    WHERE id = @id AND ${THROUGH_A_PHONE} AND ${AWAITS_RECEIPT} AND NOT ${SENT_BY_PHONE}`),
    // Only a job still waiting for its receipt: one already settled keeps its own schedule.
    receiptDue: db.prepare<[{ id: number; now: number }]>(`
    UPDATE jobs SET next_attempt_at = @now
    WHERE id = @id AND state = 'reporting' AND receipt_deadline IS NOT NULL AND next_attempt_at > @now`),
    recordReceipt: db.prepare<[{ id: number; now: number; outcome: Outcome; receipt: string; errorCode: FailureCode | ""; errorMessage: string }]>(`
    UPDATE jobs SET outcome = @outcome, receipt = @receipt, receipt_deadline = NULL, receipt_at = @now,
      error_code = coalesce(nullif(@errorCode, ''), error_code), error_message = coalesce(nullif(@errorMessage, ''), error_message),
      attempts = 0, next_attempt_at = @now, updated_at = @now
    WHERE id = @id AND ${AWAITS_RECEIPT}`),
    // Settled: counted into usage in the same transaction (usage-count.ts).
    reported: db.prepare<[{ id: number; status: string; now: number }]>(`
    UPDATE jobs SET state = 'done', reported_status = @status, reported_at = @now, updated_at = @now WHERE id = @id`),
    giveUp: db.prepare<[number, number]>("UPDATE jobs SET state = 'dead', updated_at = ? WHERE id = ?"),
    takeReport: db.prepare<[number, number, number]>(TAKE_REPORT("?", "?", "?")),
    retryLater: db.prepare<[number, string, number, number]>(`
    UPDATE jobs SET next_attempt_at = ?, attempts = attempts + 1, error_message = coalesce(error_message, ?), updated_at = ?
    WHERE id = ?`),
  };
}
