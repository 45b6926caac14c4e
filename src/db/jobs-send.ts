import type { Db } from "./index.ts";
import type { Claim, Result, SendLater } from "./job-types.ts";
import { failureDetail, JOB_TEXTS, type JobStatements } from "./jobs-statements.ts";
import { ms } from "./ms.ts";
import type { Timeline } from "./timeline.ts";
import type { MonthOf } from "./usage-month.ts";
import { capReached, prepareReservation } from "./usage-store.ts";

/** The job store's steps of a send (jobs.ts): claimed, sent later, held, its result. */
export function createSendSteps(db: Db, sql: JobStatements, timeline: Timeline, monthOf: MonthOf) {
  // A wait is logged when its reason changes, not at every try of a long outage.
  const sendLater = db.transaction((id: number, at: number, reason: string, now: number, how: SendLater) => {
    const before = sql.lastReason.get(id);
    const flags = { fresh: how.freshKey ? 1 : 0, held: how.held ? 1 : 0, unclear: how.unclear ? 1 : 0 };
    if (sql.sendLater.run({ id, at, reason, now, ...flags }).changes === 0) return;
    if (before !== reason) timeline.add(id, now, how.held ? "held" : "retry", reason);
  });
  const sendAgain = db.transaction((id: number, at: number, reason: string, now: number) => {
    if (sql.sendAgain.run({ id, at, reason, now }).changes > 0) timeline.add(id, now, "retry", reason);
  });
  const recordResult = db.transaction((row: Parameters<typeof sql.recordResult.run>[0]) => {
    if (sql.recordResult.run(row).changes === 0) return;
    if (row.outcome === "failed") timeline.add(row.id, row.now, "failed", failureDetail(row.errorCode, row.errorMessage));
  });
  const claimForSending = createClaim(db, sql, timeline, monthOf, recordResult);
  return {
    /**
     * Marks the job as being sent, with the attempt's idempotency key (kept from the first
     * attempt on). Committed before the gateway call; false if another worker took it, or
     * when its `parts` would pass the location's monthly cap: then it is failed,
     * `monthly_cap`, in the same transaction, to be reported. With `parts`, its first claim
     * reserves them in the month's usage. No claim: nothing goes to the gateway (the job is failed without a send).
     */
    claimForSending(id: number, now: number, claim?: Claim): boolean {
      const row = {
        id,
        now: ms(now),
        key: claim?.idempotencyKey ?? null,
        tag: claim?.apiKeyTag ?? null,
        sender: claim?.senderId ?? null,
        gateway: claim?.gateway ?? "cast",
      };
      return claimForSending({ ...row, fresh: claim?.fresh ? 1 : 0 }, claim?.parts ?? 0);
    },
    /**
     * Queued again for `at`: with the same idempotency key after an unclear answer; with
     * `freshKey` after a refusal that proves nothing was ever sent under the old key (Cast
     * keeps a refused send's answer under its key too, so the old key could only be refused again).
     */
    sendLater(id: number, at: number, reason: string, now: number, how: SendLater = {}): void {
      sendLater(id, ms(at), reason, ms(now), how);
    },
    /**
     * A sent message still waiting for its receipt that the gateway proves never went (a
     * phone's send limit): queued again for `at` under a fresh key, its attempts and
     * result cleared, as if new. The old key's message is over on the gateway: nothing can go twice.
     */
    sendAgain(id: number, at: number, reason: string, now: number): void {
      sendAgain(id, ms(at), reason, ms(now));
    },
    /** The send's result; with `receipt`, the report waits for the carrier's receipt (first look at `receipt.at`). */
    recordResult(id: number, result: Result, now: number, receipt?: { at: number; deadline: number }): void {
      recordResult(resultRow(id, result, now, monthOf, receipt));
    },
    ...createHolds(db, sql, timeline),
  };
}

/**
 * The claim's transaction. The cap is checked and the parts reserved in it: with any number
 * of sends in flight, each sees the others' reservations (docs/usage.md, "Caps"). Over the
 * cap, the job is failed here, `monthly_cap`, and is not claimed.
 */
function createClaim(db: Db, sql: JobStatements, timeline: Timeline, monthOf: MonthOf, recordResult: (row: ReturnType<typeof resultRow>) => void) {
  const reserve = prepareReservation(db);
  return db.transaction((row: Parameters<typeof sql.claimForSending.run>[0], parts: number) => {
    const capped = parts > 0 ? reserve(row.id, parts, monthOf(row.now)) : undefined;
    if (capped) {
      recordResult(resultRow(row.id, { outcome: "failed", errorCode: "monthly_cap", errorMessage: capReached(capped.cap) }, row.now, monthOf));
      return false;
    }
    const claimed = sql.claimForSending.run(row).changes > 0;
    if (claimed && row.fresh) timeline.add(row.id, row.now, "retry", JOB_TEXTS.fresh);
    return claimed;
  });
}

function createHolds(db: Db, sql: JobStatements, timeline: Timeline) {
  const markHeld = db.transaction((id: number, reason: string, at: number, now: number) => {
    const wasHeld = sql.heldNow.get(id) !== 0;
    sql.markHeld.run({ id, reason, at, now });
    if (!wasHeld) timeline.add(id, now, "held", reason);
  });
  return {
    /**
     * Waits on a key the gateway refused until `at`: shown as held, with `reason`. Out of
     * the queue's way meanwhile, so it takes no turn from reports or from other keys' sends.
     */
    markHeld(id: number, reason: string, at: number, now: number): void {
      markHeld(id, reason, ms(at), ms(now));
    },
    /** A held key works again: its messages (every held one, in fact) are due now. */
    wakeHeld(now: number): number {
      return sql.wakeHeld.run({ now: ms(now) }).changes;
    },
  };
}

/** The result's row; `month`, the month it counts in when no claim reserved its parts (a refusal). */
export function resultRow(id: number, result: Result, now: number, monthOf: MonthOf, receipt?: { at: number; deadline: number }) {
  return {
    id,
    now: ms(now),
    month: monthOf(ms(now)),
    at: ms(receipt?.at ?? now),
    deadline: receipt ? ms(receipt.deadline) : null,
    outcome: result.outcome,
    errorCode: result.errorCode ?? "",
    errorMessage: result.errorMessage ?? "",
    gatewayMessageId: result.gatewayMessageId ?? "",
    parts: result.parts ?? null,
  } as const;
}
