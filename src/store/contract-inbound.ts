import type { InboundFilter, InboundRow, InboundState, NewInbound } from "./types.ts";

/** Why an operator's routing of a reply was refused; undefined when it was routed. */
export type AssignRefusal = { why: "not_found" } | { why: "routed"; locationId: string } | { why: "not_installed" };

/** The replies from phones into HighLevel, and the queue that posts them. */
export interface InboundStore {
  /**
   * Stores a reply (routed or not) unless its dedupe key was stored before: then the
   * earlier reply's id, and nothing written. A routed stop or start word changes the
   * location's opt-out list (for `row.phone`, E.164) in the same transaction.
   */
  receive(row: NewInbound, now: number): Promise<string | undefined>;
  /**
   * An operator's routing of an unrouted reply to an installed location, its stop or start
   * word applied to that location's opt-out list, in one transaction; or why not.
   */
  assign(inboundId: string, locationId: string, now: number): Promise<AssignRefusal | undefined>;
  /** bridge's id of the reply stored under this dedupe key. */
  idOfKey(dedupeKey: string): Promise<string | undefined>;
  get(inboundId: string): Promise<InboundRow | undefined>;
  byId(id: number): Promise<InboundRow | undefined>;
  /** Replies due now, oldest first: of one contact, only the first still waiting, so its replies keep their order. */
  due(now: number, limit: number): Promise<number[]>;
  /** When the next reply the queue may take comes due (undefined: none waits). */
  nextDue(): Promise<number | undefined>;
  list(filter: InboundFilter): Promise<InboundRow[]>;
  /** Another reply than `id` is already settled as HighLevel's message `crmMessageId`. */
  claimed(id: number, crmMessageId: string): Promise<boolean>;
  counts(): Promise<Record<InboundState, number>>;
  /** An installed location (not uninstalled) of this id. */
  installed(locationId: string): Promise<boolean>;
  /** The installed location whose message to this phone (either form) came last; with `apiKeyTag`, of those sent with that key. */
  lastSentTo(e164: string, local: string, apiKeyTag?: string): Promise<string | undefined>;
  /** Stores a reply as it is; false when its dedupe key was stored before (nothing written). */
  insert(row: NewInbound & { state: "unrouted" | "queued" }, now: number): Promise<boolean>;
  /** Routes an unrouted reply; false when it is not unrouted. */
  route(inboundId: string, locationId: string, now: number): Promise<boolean>;
  setContact(id: number, contactId: string, now: number): Promise<void>;
  /**
   * Committed before the reply is posted: after a crash it is looked up before it is posted
   * again. Not due again for POSTING_HOLD_MS (src/db/inbound.ts): another server's queue leaves it to the one
   * posting it, which settles it or says when to look it up first.
   */
  markPosting(id: number, now: number): Promise<boolean>;
  /** The replies a stopped server left posting, due now at the latest (a server alone at its start); how many. */
  resumePosting(now: number): Promise<number>;
  posted(id: number, crmMessageId: string, now: number): Promise<void>;
  /** Queued again for `at`; `counted` (the default): the try counts towards the limit. */
  retryLater(id: number, at: number, error: string, now: number, counted?: boolean): Promise<void>;
  /** A reply whose post may have reached HighLevel, looked up (again) at `at`; `looks`: the lookups so far. */
  lookLater(id: number, at: number, error: string, now: number, counted: boolean, looks: number): Promise<void>;
  giveUp(id: number, error: string, now: number): Promise<void>;
  /** Deletes up to `limit` finished replies last changed before `before`; how many. */
  prune(before: number, limit: number): Promise<number>;
}
