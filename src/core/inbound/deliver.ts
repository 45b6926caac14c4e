import type { InboundStore } from "../../store/contract.ts";
import type { InboundRow } from "../../store/types.ts";
import { CrmError, errorMessage } from "../../errors.ts";
import type { CrmClient, InboundMessage } from "../clients/crm.ts";
import { nextReport, reportRetryable, tokenRefused } from "../retry-policy.ts";
import type { TokenService } from "../installs/tokens.ts";
import type { Logger } from "../log.ts";
import { maskPhone } from "../mask.ts";
import { delayMs, neverSent, RETRY, sleep } from "../retry.ts";

/** Tries at storing HighLevel's answer before the reply is left "posting" (RETRY.storeResult). */
const STORE_TRIES = 8;

export interface DeliverDeps {
  store: InboundStore;
  crm: Pick<CrmClient, "upsertContact" | "addInboundMessage" | "findInboundMessages">;
  tokenService: Pick<TokenService, "forJob" | "rejected">;
  /** CRM_PROVIDER_ID */
  providerId: string;
  now: () => number;
  log: Logger;
  /** First wait before a try again (RETRY.report). */
  backoffMs?: number;
  /** Tries before a reply is given up (RETRY.report). */
  attempts?: number;
  /** First wait before storing HighLevel's answer again (RETRY.storeResult). */
  storeRetryMs?: number;
}

/** Lookups that must not find a reply whose post got no clear answer before it is posted again. */
const LOOKS = 2;

/**
 * Delivers one queued reply to HighLevel (docs/http.md, "Replies"): the contact by upsert
 * (idempotent: retried freely; a stop or start word sets or lifts its SMS DND), then the
 * inbound message. "posting" is committed before the post. A failure that proves HighLevel
 * did not take it (no connection, a 4xx, 429, 502, 503) is retried like a status report.
 * One that leaves it unknown (a timeout, 500, 504, a stop mid-post) leaves it "posting":
 * it is looked up in HighLevel (HighLevel does not deduplicate on altId), settled with
 * HighLevel's id when found, and posted again only when two lookups did not find it.
 */
export async function deliverInbound(deps: DeliverDeps, id: number): Promise<void> {
  const row = await deps.store.byId(id);
  if (!row || (row.state !== "queued" && row.state !== "posting")) return;
  let token: string | undefined;
  try {
    const valid = await deps.tokenService.forJob(row.locationId);
    if ("waitMs" in valid) return await later(deps, row, valid.waitMs, "the location's token is being renewed", false);
    token = valid.accessToken;
    const reply = { ...row, contactId: row.contactId ?? (await upsert(deps, row, token)) };
    if (row.state === "posting") return await lookUp(deps, reply, token);
    if (!(await deps.store.markPosting(row.id, deps.now()))) return;
    await post(deps, reply, token);
  } catch (error) {
    if (token && tokenRefused(error)) await deps.tokenService.rejected(row.locationId, token).catch(() => undefined);
    await failed(deps, row, error);
  }
}

async function upsert(deps: DeliverDeps, row: InboundRow, token: string): Promise<string> {
  const dnd = row.optOut || undefined;
  const contactId = await deps.crm.upsertContact(token, { locationId: row.locationId, phone: row.phone, dnd });
  await deps.store.setContact(row.id, contactId, deps.now());
  return contactId;
}

type Reply = InboundRow & { contactId: string };

/** The message as it is posted, and looked up by: the same date each time. */
function message(deps: DeliverDeps, row: Reply): InboundMessage {
  const date = new Date(row.receivedMs).toISOString();
  return { contactId: row.contactId, message: row.text, altId: row.inboundId, date, conversationProviderId: deps.providerId };
}

/** Posts the message; its errors are told apart here, where it is known the call went. */
async function post(deps: DeliverDeps, row: Reply, token: string): Promise<void> {
  let messageId: string;
  try {
    messageId = await deps.crm.addInboundMessage(token, message(deps, row));
  } catch (error) {
    if (notTaken(error)) throw error;
    return await answerLost(deps, row, error);
  }
  await storePosted(deps, row, messageId);
}

/**
 * HighLevel may have taken it: it stays "posting", to be looked up before it is posted
 * again, however many tries it took. A 2xx without a message id is HighLevel dropping it.
 */
async function answerLost(deps: DeliverDeps, row: InboundRow, error: unknown): Promise<void> {
  const why = errorMessage(error);
  if (!reportRetryable(error)) {
    await deps.store.giveUp(row.id, `delivery unknown: ${why}; not posted again`, deps.now());
    deps.log.error(`reply ${row.inboundId} of location ${row.locationId}: delivery unknown (${why}); not posted again`);
    return;
  }
  const next = nextReport(error, row.attempts, { maxTries: deps.attempts, backoffMs: deps.backoffMs });
  const waitMs = next.verdict === "retry" ? next.inMs : delayMs(RETRY.report, row.attempts, deps.backoffMs);
  const reason = `no clear answer to its post (${why}): looked up in HighLevel before it is posted again`;
  await deps.store.lookLater(row.id, deps.now() + waitMs, reason, deps.now(), true, 0);
  deps.log.warn(`reply ${row.inboundId} of location ${row.locationId}: ${reason}`);
}

/** The first of HighLevel's messages `found` that no other reply is settled as. */
async function firstUnclaimed(deps: DeliverDeps, id: number, found: string[]): Promise<string | undefined> {
  for (const crmId of found) if (!(await deps.store.claimed(id, crmId))) return crmId;
  return undefined;
}

/** A post whose answer was lost: found, it is settled with HighLevel's id; absent at the second look, posted again. */
async function lookUp(deps: DeliverDeps, row: Reply, token: string): Promise<void> {
  const found = await deps.crm.findInboundMessages(token, { ...message(deps, row), locationId: row.locationId });
  const messageId = await firstUnclaimed(deps, row.id, found);
  if (messageId) {
    deps.log.info(`reply ${row.inboundId}: found in HighLevel, which had taken its post`);
    return storePosted(deps, row, messageId);
  }
  const looks = row.looks + 1;
  const now = deps.now();
  if (looks < LOOKS) {
    const reason = `not found in HighLevel at lookup ${looks}; looked up again before it is posted again`;
    await deps.store.lookLater(row.id, now + delayMs(RETRY.report, row.attempts, deps.backoffMs), reason, now, false, looks);
    return;
  }
  if (row.attempts >= (deps.attempts ?? RETRY.report.tries)) {
    // Its tries are spent, and HighLevel surely does not hold it: not delivered, and known so.
    const why = `not delivered to HighLevel: no clear answer to ${row.attempts} tries, and not found there`;
    await deps.store.giveUp(row.id, why, now);
    return deps.log.error(`reply ${row.inboundId} of location ${row.locationId}: ${why}`);
  }
  await deps.store.retryLater(row.id, now, `not found in HighLevel after ${looks} lookups: posted again`, now, false);
  deps.log.warn(`reply ${row.inboundId} of location ${row.locationId}: not found in HighLevel after ${looks} lookups; posted again`);
}

/**
 * HighLevel took it: its id is stored, tried again while the database refuses. It never
 * goes back to the queue from here: left "posting", it is looked up, and found, later.
 */
async function storePosted(deps: DeliverDeps, row: InboundRow, messageId: string): Promise<void> {
  const posted = `reply ${row.inboundId} from ${maskPhone(row.phone)} posted to location ${row.locationId} as message ${messageId}`;
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.store.posted(row.id, messageId, deps.now());
      return deps.log.info(posted);
    } catch (error) {
      if (attempt + 1 >= STORE_TRIES) return deps.log.error(`${posted}, which could not be stored (${errorMessage(error)}): it stays "posting", to be looked up, not posted again`);
      await sleep(delayMs(RETRY.storeResult, attempt, deps.storeRetryMs));
    }
  }
}

/** HighLevel surely did not take the message: no connection was made, or it answered that it refused it. */
function notTaken(error: unknown): boolean {
  return error instanceof CrmError ? error.notTaken : neverSent(error);
}

/** Tried again like a status report, or given up after as many tries or an error that will not pass. */
async function failed(deps: DeliverDeps, row: InboundRow, error: unknown): Promise<void> {
  const next = nextReport(error, row.attempts, { maxTries: deps.attempts, backoffMs: deps.backoffMs });
  if (next.verdict === "fail") {
    // Only while it cannot be looked up is a reply that may be in HighLevel left unknown.
    const why = row.state === "posting" ? `delivery unknown: it could not be looked up in HighLevel (${errorMessage(error)}); not posted again` : errorMessage(error);
    await deps.store.giveUp(row.id, why, deps.now());
    deps.log.error(`reply ${row.inboundId} of location ${row.locationId} not delivered to HighLevel: ${why}`);
    return;
  }
  await later(deps, row, next.inMs, errorMessage(error), true);
}

/** Tried again at `waitMs`; a reply whose post may have gone stays "posting", to be looked up then. */
async function later(deps: DeliverDeps, row: InboundRow, waitMs: number, reason: string, counted: boolean): Promise<void> {
  const at = deps.now() + waitMs;
  if (row.state === "posting") await deps.store.lookLater(row.id, at, reason, deps.now(), counted, row.looks);
  else await deps.store.retryLater(row.id, at, reason, deps.now(), counted);
  deps.log.debug(`reply ${row.inboundId}: ${reason}; trying again in ${waitMs} ms`);
}
