import {
  backlogFromRow, backlogSql, BY_MESSAGE_ID, COUNTS, fromRow, listSql, MESSAGE_STATUSES, RECEIVED_SINCE, requeueSql, UNCHANGED, USAGE,
  type MessageRow, type MessageStatus,
} from "../../db/messages.ts";
import { INSERT_EVENT, type MessageEvent } from "../../db/timeline.ts";
import type { MessageLog } from "../contract-jobs.ts";
import type { Backlog, Usage } from "../types.ts";
import { transaction, type Pool } from "./pool.ts";
import { pgUsageCount } from "./usage-count.ts";

/** SQLite's `?` placeholders as PostgreSQL's `$1`, `$2`, … in order: the log's statements are written once. */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

const BACKLOG = backlogSql((column) => `${column} COLLATE "C"`);

/**
 * The message log on PostgreSQL: the same statements over the same jobs table as
 * src/db/messages.ts on SQLite, so that lists, filters and counts agree on both.
 */
export function pgMessages(pool: Pool): MessageLog {
  const rows = async <T>(sql: string, params: unknown[] = []) => (await pool.query<T & object>(numbered(sql), params)).rows as T[];
  return {
    async list(filter) {
      const { sql, params } = listSql(filter);
      return (await rows<MessageRow>(sql, params)).map(fromRow);
    },
    async get(messageId) {
      const row = (await rows<MessageRow>(BY_MESSAGE_ID, [messageId]))[0];
      return row && fromRow(row);
    },
    events: (id) => rows<MessageEvent>("SELECT at, kind, detail FROM job_events WHERE job_id = ? ORDER BY id", [id]),
    async counts() {
      const all = Object.fromEntries(MESSAGE_STATUSES.map((s) => [s, 0])) as Record<MessageStatus, number>;
      for (const { status, n } of await rows<{ status: MessageStatus; n: number }>(COUNTS)) all[status] = n;
      return all;
    },
    async backlog(): Promise<Backlog[]> {
      return (await rows<{ location_id: string; waiting: number; oldest: number }>(BACKLOG)).map(backlogFromRow);
    },
    requeue: (message, now, detail) => requeue(pool, message.id, message.updatedAt, now, detail),
    async usage(locationId, since) {
      return (await rows<Usage>(USAGE, [locationId, since]))[0] ?? { messages: 0, parts: 0, delivered: 0, failed: 0 };
    },
    async receivedSince(locationId, since, prefix) {
      return (await rows<{ created_at: number }>(RECEIVED_SINCE, [locationId, since, prefix, prefix])).map((r) => r.created_at);
    },
  };
}

/**
 * An operator's retry of a settled message, in one transaction: the job, locked, must be
 * as the operator saw it (`seen`: its updated_at then); what it counted in usage is taken
 * back, it is queued again as new, and its timeline says so.
 */
async function requeue(pool: Pool, id: number, seen: number, now: number, detail: string): Promise<boolean> {
  return transaction(pool, async (client) => {
    const found = await client.query(numbered(`${UNCHANGED} FOR UPDATE`), [id, seen]);
    if (found.rowCount === 0) return false;
    await pgUsageCount.unsettled(client, id);
    await client.query(`${requeueSql("$2")} WHERE id = $1`, [id, now]);
    await client.query(`${INSERT_EVENT} VALUES ($1, $2, 'requeued', $3)`, [id, now, detail]);
    return true;
  });
}
