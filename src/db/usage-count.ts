import type { CarrierCode, FailureCode } from "./failures.ts";
import type { Db } from "./db.ts";

/**
 * What a settled message counts as in usage (docs/usage.md, "What is counted, and when"): delivered,
 * one of the failed classes, or refused (the location's opt-out list, its monthly cap). They
 * add up to messages. Every code of failures.ts has its class here (the type holds it to
 * that); a carrier's code is `rejected` for REJECTD and `undelivered` for any other.
 */
export const COUNTED_AS = {
  no_token: "failed_not_sent",
  uninstalled: "failed_not_sent",
  not_approved: "failed_not_sent",
  no_api_key: "failed_not_sent",
  invalid_api_key: "failed_not_sent",
  gateway_key_refused: "failed_not_sent",
  send_failed: "failed_not_sent",
  gateway_rate_limited: "failed_not_sent",
  gateway_unreachable: "failed_not_sent",
  invalid_phone: "failed_invalid",
  empty_message: "failed_invalid",
  message_too_long: "failed_invalid",
  too_many_parts: "failed_invalid",
  gateway_rejected: "failed_rejected",
  gateway_unknown: "failed_unknown",
  delivery_unknown: "failed_unknown",
  opted_out: "refused_opt_out",
  monthly_cap: "refused_cap",
} as const satisfies Record<Exclude<FailureCode, CarrierCode>, string>;

/** The usage table's counters of messages, in the order the CLI and the CSV show them. */
export const OUTCOME_COLUMNS = [
  "delivered",
  "failed_invalid",
  "failed_not_sent",
  "failed_rejected",
  "failed_undelivered",
  "failed_unknown",
  "refused_opt_out",
  "refused_cap",
] as const;
export type OutcomeColumn = (typeof OUTCOME_COLUMNS)[number];

/** A job's counter column, in SQL over a jobs row. */
export const COUNTED_AS_SQL = `CASE WHEN outcome = 'delivered' THEN 'delivered'
  ${Object.entries(COUNTED_AS)
    .map(([code, column]) => `WHEN error_code = '${code}' THEN '${column}'`)
    .join(" ")}
  WHEN error_code = 'REJECTD' THEN 'failed_rejected' ELSE 'failed_undelivered' END`;

/**
 * The parts a job counts, in SQL over a jobs row: those of a message the gateway took
 * (Cast bills what it sends), as the gateway counted them, else as its claim reserved.
 * None for a message never sent, nor one the receipt says never left (Cast refunds FAILED;
 * a phone that could not send it).
 */
export const BILLED_PARTS_SQL = `CASE WHEN gateway_message_id IS NOT NULL
  AND coalesce(receipt, '') NOT IN ('FAILED', 'PHONE_FAILED', 'PHONE_NOT_SENT') THEN coalesce(parts, reserved_parts, 0) ELSE 0 END`;

/** The gateway a job counts under: 'android' for a phone's key (`android:<device>`), else 'cast'. */
export const GATEWAY_SQL = "CASE WHEN gateway LIKE 'android:%' THEN 'android' ELSE 'cast' END";

/** `col = col + excluded.col` for each counter: an upsert adds to the row. */
const ADD = ["messages", "parts", ...OUTCOME_COLUMNS, "replies"].map((c) => `${c} = ${c} + excluded.${c}`).join(", ");

export type UsageCount = ReturnType<typeof prepareUsageCount>;

/**
 * A job's settling counted into usage, and taken back (an operator's retry of a settled
 * message): each runs inside the caller's transaction, beside the job's own change. A job
 * is counted once (`counted`), and its claim's reservation is released when it is. The
 * job keeps `reserved_parts`: what it billed from it (no count from the gateway) is what
 * a retry takes back.
 */
export function prepareUsageCount(db: Db) {
  const add = db.prepare<[{ id: number; month: string; sign: number; counted: number }]>(`
    WITH j AS (SELECT location_id, coalesce(usage_month, @month) AS month, ${GATEWAY_SQL} AS gw,
      ${COUNTED_AS_SQL} AS k, ${BILLED_PARTS_SQL} AS p FROM jobs WHERE id = @id AND counted = @counted)
    INSERT INTO usage (location_id, month, gateway, messages, parts, ${OUTCOME_COLUMNS.join(", ")})
    SELECT location_id, month, gw, @sign, @sign * p, ${OUTCOME_COLUMNS.map((c) => `@sign * (k = '${c}')`).join(", ")} FROM j WHERE true
    ON CONFLICT (location_id, month, gateway) DO UPDATE SET ${ADD}`);
  const release = db.prepare<[{ id: number }]>(`
    UPDATE usage_reserved SET parts = parts - (SELECT reserved_parts FROM jobs WHERE id = @id)
    WHERE (location_id, month) = (SELECT location_id, usage_month FROM jobs WHERE id = @id AND counted = 0 AND reserved_parts > 0)`);
  const mark = db.prepare<[{ id: number; month: string }]>(`
    UPDATE jobs SET counted = 1, usage_month = coalesce(usage_month, @month) WHERE id = @id AND counted = 0`);
  const reply = db.prepare<[{ location: string; month: string; gateway: string }]>(`
    INSERT INTO usage (location_id, month, gateway, replies) VALUES (@location, @month, @gateway, 1)
    ON CONFLICT (location_id, month, gateway) DO UPDATE SET ${ADD}`);
  return {
    /** The job settled (done or dead) in `month` (used when no claim or refusal set its own): counted once. */
    settled(id: number, month: string): void {
      add.run({ id, month, sign: 1, counted: 0 });
      release.run({ id });
      mark.run({ id, month });
    },
    /** The settled job is queued again: what it counted is taken back, to be counted as it settles anew. */
    unsettled(id: number): void {
      add.run({ id, month: "", sign: -1, counted: 1 });
    },
    /** A reply committed for `location` in `month`, through `gateway` ('android', 'api'). */
    reply(location: string, month: string, gateway: string): void {
      reply.run({ location, month, gateway });
    },
  };
}
