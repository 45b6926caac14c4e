import type { Db } from "./index.ts";
import { ms } from "./ms.ts";
import { prepareUsageCount, type UsageCount } from "./usage-count.ts";
import { DEFAULT_USAGE_ZONE, monthIn, type MonthOf } from "./usage-month.ts";

/**
 * How long a reply being posted is left to the server posting it: longer than a post to
 * HighLevel can take (30 s a try, src/core/clients/crm.ts). A server stopped mid-post is
 * looked up once it has passed, or at once by a server that starts alone.
 */
export const POSTING_HOLD_MS = 120_000;

export type InboundState = "unrouted" | "queued" | "posting" | "done" | "dead";
/** How a reply found its location: named by its source, by the phone that took it, by the last send to its sender, or by an operator. */
export type RoutedBy = "" | "given" | "device" | "last_sent" | "operator";
export type OptOutWord = "" | "stop" | "start";

/** A reply as it is committed. */
export interface NewInbound {
  inboundId: string;
  source: "android" | "api";
  dedupeKey: string;
  phone: string;
  text: string;
  to: string;
  deviceId: string;
  receivedAt: string;
  receivedMs: number;
  sourceId: string;
  locationId: string;
  routedBy: RoutedBy;
  optOut: OptOutWord;
}

/** A reply as stored, with what became of it. */
export interface InboundRow extends NewInbound {
  id: number;
  state: InboundState;
  contactId: string | null;
  crmMessageId: string | null;
  attempts: number;
  /** Lookups in HighLevel that did not find it since its last post (a post with no clear answer). */
  looks: number;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Which replies to list: newest first by when bridge took them. */
export interface InboundFilter {
  locationId?: string;
  states?: readonly InboundState[];
  since?: number;
  limit: number;
}

export type InboundStore = ReturnType<typeof createInboundStore>;

/** The inbound row as InboundRow's fields; the aliases quoted, so that PostgreSQL keeps their case (src/store/postgres/inbound.ts). */
export const INBOUND_COLUMNS = `id, inbound_id AS "inboundId", source, dedupe_key AS "dedupeKey", phone, text, to_number AS "to",
  device_id AS "deviceId", received_at AS "receivedAt", received_ms AS "receivedMs", source_id AS "sourceId",
  location_id AS "locationId", routed_by AS "routedBy", opt_out AS "optOut", state, contact_id AS "contactId",
  crm_message_id AS "crmMessageId", attempts, looks, error, created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * The inbound table (schema 11) and the lookups that route a reply. Every write is one
 * statement (a routed reply's with its count in usage, in the month `monthOf` names): the
 * sink runs its own in one transaction, the queue's through the group commit.
 */
export function createInboundStore(db: Db, monthOf: MonthOf = monthIn(DEFAULT_USAGE_ZONE)) {
  const s = prepareStatements(db);
  return { ...inboundWrites(db, s, prepareUsageCount(db), monthOf), ...inboundReads(db, s) };
}

type Statements = ReturnType<typeof prepareStatements>;

/** Each write is one statement; a reply that finds its location is counted in usage with it. */
function inboundWrites(db: Db, s: Statements, usage: UsageCount, monthOf: MonthOf) {
  const counted = (locationId: string, source: string, now: number) => usage.reply(locationId, monthOf(now), source === "android" ? "android" : "api");
  const insert = db.transaction((row: NewInbound & { state: "unrouted" | "queued" }, now: number): boolean => {
    if (s.insert.run({ ...row, receivedMs: ms(row.receivedMs), now }).changes === 0) return false;
    if (row.locationId) counted(row.locationId, row.source, now);
    return true;
  });
  const route = db.transaction((inboundId: string, locationId: string, now: number): boolean => {
    if (s.route.run({ inboundId, locationId, now }).changes === 0) return false;
    counted(locationId, s.byInboundId.get(inboundId)?.source ?? "api", now);
    return true;
  });
  return {
    /** Stores a reply; false when its dedupe key was stored before (nothing written). */
    insert(row: NewInbound & { state: "unrouted" | "queued" }, now: number): boolean {
      return insert(row, ms(now));
    },
    /** An operator's routing of an unrouted reply; false when it is not unrouted. */
    route(inboundId: string, locationId: string, now: number): boolean {
      return route(inboundId, locationId, ms(now));
    },
    setContact(id: number, contactId: string, now: number): void {
      s.contact.run(contactId, ms(now), id);
    },
    /** Committed before the inbound message is posted: after a crash it is looked up before it is posted again. */
    markPosting(id: number, now: number): boolean {
      return s.posting.run({ now: ms(now), id }).changes > 0;
    },
    resumePosting(now: number): number {
      return s.resume.run(ms(now)).changes;
    },
    posted(id: number, crmMessageId: string, now: number): void {
      s.posted.run(crmMessageId, ms(now), id);
    },
    /** Queued again for `at`; `counted`: the try counts towards the limit (a wait for a token does not). */
    retryLater(id: number, at: number, error: string, now: number, counted = true): void {
      s.retry.run({ id, at: ms(at), error, now: ms(now), counted: counted ? 1 : 0 });
    },
    /**
     * A reply whose post may have reached HighLevel, looked up (again) at `at`; it stays
     * "posting". `looks`: the lookups so far that did not find it.
     */
    lookLater(id: number, at: number, error: string, now: number, counted: boolean, looks: number): void {
      s.lookLater.run({ id, at: ms(at), error, now: ms(now), counted: counted ? 1 : 0, looks });
    },
    giveUp(id: number, error: string, now: number): void {
      s.dead.run(error, ms(now), id);
    },
    /** Deletes up to `limit` finished replies last changed before `before`; how many. */
    prune(before: number, limit: number): number {
      return s.prune.run(ms(before), limit).changes;
    },
  };
}

function inboundReads(db: Db, s: Statements) {
  return {
    /** bridge's id of the reply stored under this dedupe key. */
    idOfKey(dedupeKey: string): string | undefined {
      return s.byKey.get(dedupeKey)?.inboundId;
    },
    get(inboundId: string): InboundRow | undefined {
      return s.byInboundId.get(inboundId);
    },
    byId(id: number): InboundRow | undefined {
      return s.byId.get(id);
    },
    /**
     * Replies due now (queued, or posting and to be looked up), oldest first: of one
     * contact, only the first still waiting, so a contact's replies keep their order.
     */
    due(now: number, limit: number): number[] {
      return s.due.all(ms(now), limit).map((r) => r.id);
    },
    /** When the next reply the queue may take comes due (undefined: none waits). */
    nextDue(): number | undefined {
      return s.nextDue.get()?.at ?? undefined;
    },
    list(filter: InboundFilter): InboundRow[] {
      const clauses: [string, unknown[]][] = [];
      if (filter.locationId !== undefined) clauses.push(["location_id = ?", [filter.locationId]]);
      if (filter.states) clauses.push([`state IN (${filter.states.map(() => "?").join(", ")})`, [...filter.states]]);
      if (filter.since !== undefined) clauses.push(["created_at >= ?", [filter.since]]);
      const where = clauses.map(([clause]) => clause);
      const params = clauses.flatMap(([, values]) => values);
      const sql = `SELECT ${INBOUND_COLUMNS} FROM inbound ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT ?`;
      return db.prepare<unknown[], InboundRow>(sql).all(...params, filter.limit);
    },
    /** Another reply than `id` is already settled as HighLevel's message `crmMessageId`. */
    claimed(id: number, crmMessageId: string): boolean {
      return s.claimed.get(crmMessageId, id) !== undefined;
    },
    counts(): Record<InboundState, number> {
      const all: Record<InboundState, number> = { unrouted: 0, queued: 0, posting: 0, done: 0, dead: 0 };
      for (const { state, n } of s.counts.all()) all[state] = n;
      return all;
    },
    /** An installed location (not uninstalled) of this id. */
    installed(locationId: string): boolean {
      return s.installed.get(locationId) !== undefined;
    },
    /**
     * The installed location whose message to this phone (either form) came last; with
     * `apiKeyTag`, of those sent with that key (a phone's: `android:<device>`'s tag).
     */
    lastSentTo(e164: string, local: string, apiKeyTag?: string): string | undefined {
      const row = apiKeyTag === undefined ? s.lastSent.get(e164, local) : s.lastSentWith.get(e164, local, apiKeyTag);
      return row?.locationId;
    },
  };
}

/** A reply the queue may take: queued, or posting (its post got no clear answer, or a stop caught it). */
export const WAITING = "i.state IN ('queued', 'posting')";
/** No earlier reply of the same contact waits (the indexes inbound_waiting and inbound_waiting_by_contact). */
export const FIRST_OF_CONTACT = `NOT EXISTS (SELECT 1 FROM inbound AS e WHERE e.location_id = i.location_id AND e.phone = i.phone
  AND e.id < i.id AND e.state IN ('queued', 'posting'))`;

/** The store's statements, prepared once. */
function prepareStatements(db: Db) {
  return {
    insert: db.prepare(`INSERT INTO inbound (inbound_id, source, dedupe_key, phone, text, to_number, device_id, received_at,
      received_ms, source_id, location_id, routed_by, opt_out, state, next_attempt_at, created_at, updated_at)
      VALUES (@inboundId, @source, @dedupeKey, @phone, @text, @to, @deviceId, @receivedAt, @receivedMs, @sourceId,
      @locationId, @routedBy, @optOut, @state, @now, @now, @now) ON CONFLICT (dedupe_key) DO NOTHING`),
    byKey: db.prepare<[string], { inboundId: string }>("SELECT inbound_id AS inboundId FROM inbound WHERE dedupe_key = ?"),
    byInboundId: db.prepare<[string], InboundRow>(`SELECT ${INBOUND_COLUMNS} FROM inbound WHERE inbound_id = ?`),
    byId: db.prepare<[number], InboundRow>(`SELECT ${INBOUND_COLUMNS} FROM inbound WHERE id = ?`),
    due: db.prepare<[number, number], { id: number }>(
      `SELECT id FROM inbound AS i WHERE ${WAITING} AND next_attempt_at <= ? AND ${FIRST_OF_CONTACT} ORDER BY next_attempt_at, id LIMIT ?`,
    ),
    nextDue: db.prepare<[], { at: number | null }>(`SELECT min(next_attempt_at) AS at FROM inbound AS i WHERE ${WAITING} AND ${FIRST_OF_CONTACT}`),
    claimed: db.prepare<[string, number], { n: number }>("SELECT 1 AS n FROM inbound WHERE crm_message_id = ? AND id <> ?"),
    route: db.prepare(`UPDATE inbound SET location_id = @locationId, routed_by = 'operator', state = 'queued',
      next_attempt_at = @now, updated_at = @now WHERE inbound_id = @inboundId AND state = 'unrouted'`),
    contact: db.prepare("UPDATE inbound SET contact_id = ?, updated_at = ? WHERE id = ? AND state = 'queued'"),
    posting: db.prepare(`UPDATE inbound SET state = 'posting', looks = 0, updated_at = @now, next_attempt_at = @now + ${POSTING_HOLD_MS}
      WHERE id = @id AND state = 'queued'`),
    resume: db.prepare("UPDATE inbound SET next_attempt_at = min(next_attempt_at, ?) WHERE state = 'posting'"),
    posted: db.prepare("UPDATE inbound SET state = 'done', crm_message_id = ?, error = NULL, updated_at = ? WHERE id = ? AND state = 'posting'"),
    retry: db.prepare(`UPDATE inbound SET state = 'queued', attempts = attempts + @counted, next_attempt_at = @at, error = @error,
      updated_at = @now WHERE id = @id AND state IN ('queued', 'posting')`),
    lookLater: db.prepare(`UPDATE inbound SET attempts = attempts + @counted, looks = @looks, next_attempt_at = @at, error = @error,
      updated_at = @now WHERE id = @id AND state = 'posting'`),
    dead: db.prepare("UPDATE inbound SET state = 'dead', error = ?, updated_at = ? WHERE id = ? AND state IN ('queued', 'posting')"),
    prune: db.prepare<[number, number]>(`DELETE FROM inbound WHERE id IN
      (SELECT id FROM inbound WHERE state IN ('done', 'dead') AND updated_at < ? LIMIT ?)`),
    counts: db.prepare<[], { state: InboundState; n: number }>("SELECT state, count(*) AS n FROM inbound GROUP BY state"),
    installed: db.prepare<[string], { n: number }>("SELECT 1 AS n FROM tokens WHERE location_id = ? AND uninstalled_at = 0"),
    lastSent: db.prepare<[string, string], { locationId: string }>(`
      SELECT jobs.location_id AS locationId FROM jobs JOIN tokens ON tokens.location_id = jobs.location_id
      WHERE json_extract(jobs.payload, '$.phone') IN (?, ?) AND tokens.uninstalled_at = 0
      ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 1`),
    lastSentWith: db.prepare<[string, string, string], { locationId: string }>(`
      SELECT jobs.location_id AS locationId FROM jobs JOIN tokens ON tokens.location_id = jobs.location_id
      WHERE json_extract(jobs.payload, '$.phone') IN (?, ?) AND jobs.api_key_tag = ? AND tokens.uninstalled_at = 0
      ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 1`),
  };
}
