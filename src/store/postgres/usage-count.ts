import { BILLED_PARTS_SQL, COUNTED_AS_SQL, GATEWAY_SQL, OUTCOME_COLUMNS } from "../../db/usage-count.ts";
import type { Queryable } from "./pool.ts";

/** `col = usage.col + excluded.col` for each counter: an upsert adds to the row. */
const ADD = ["messages", "parts", ...OUTCOME_COLUMNS, "replies"].map((c) => `${c} = usage.${c} + excluded.${c}`).join(", ");

const ADD_JOB = `
  WITH j AS (SELECT location_id, coalesce(usage_month, $2) AS month, ${GATEWAY_SQL} AS gw,
    ${COUNTED_AS_SQL} AS k, ${BILLED_PARTS_SQL} AS p FROM jobs WHERE id = $1 AND counted = $4)
  INSERT INTO usage (location_id, month, gateway, messages, parts, ${OUTCOME_COLUMNS.join(", ")})
  SELECT location_id, month, gw, $3::bigint, $3::bigint * p, ${OUTCOME_COLUMNS.map((c) => `$3::bigint * (k = '${c}')::int`).join(", ")} FROM j
  ON CONFLICT (location_id, month, gateway) DO UPDATE SET ${ADD}`;

const RELEASE = `
  UPDATE usage_reserved SET parts = parts - (SELECT reserved_parts FROM jobs WHERE id = $1)
  WHERE (location_id, month) = (SELECT location_id, usage_month FROM jobs WHERE id = $1 AND counted = 0 AND reserved_parts > 0)`;

const MARK = "UPDATE jobs SET counted = 1, usage_month = coalesce(usage_month, $2) WHERE id = $1 AND counted = 0";

const REPLY = `
  INSERT INTO usage (location_id, month, gateway, replies) VALUES ($1, $2, $3, 1)
  ON CONFLICT (location_id, month, gateway) DO UPDATE SET ${ADD}`;

/**
 * A job's settling counted into usage and taken back, and a reply counted, on PostgreSQL
 * (src/db/usage-count.ts on SQLite): each runs on the caller's client, inside its
 * transaction, beside the job's or the reply's own change. A job is counted once
 * (`counted`), and its claim's reservation is released when it is.
 */
export const pgUsageCount = {
  /** The job settled (done or dead) in `month` (used when no claim or refusal set its own): counted once. */
  async settled(client: Queryable, id: number, month: string): Promise<void> {
    await client.query(ADD_JOB, [id, month, 1, 0]);
    await client.query(RELEASE, [id]);
    await client.query(MARK, [id, month]);
  },
  /** The settled job is queued again: what it counted is taken back, to be counted as it settles anew. */
  async unsettled(client: Queryable, id: number): Promise<void> {
    await client.query(ADD_JOB, [id, "", -1, 1]);
  },
  /** A reply committed for `location` in `month`, through `gateway` ('android', 'api'). */
  async reply(client: Queryable, location: string, month: string, gateway: string): Promise<void> {
    await client.query(REPLY, [location, month, gateway]);
  },
};
