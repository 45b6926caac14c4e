import type { Commit } from "../../db/commit.ts";
import type { InboundRow, InboundStore } from "../../db/inbound.ts";
import { CrmError, errorMessage } from "../../errors.ts";
import type { CrmClient } from "../clients/crm.ts";
import { nextReport, tokenRefused } from "../retry-policy.ts";
import type { TokenService } from "../installs/tokens.ts";
import type { Logger } from "../log.ts";
import { maskPhone } from "../mask.ts";
import { delayMs, neverSent, RETRY, sleep } from "../retry.ts";

/** Tries at storing HighLevel's answer before the reply is left "posting" (RETRY.storeResult). */
const STORE_TRIES = 8;

export interface DeliverDeps {
  store: InboundStore;
  commit: Commit;
  crm: Pick<CrmClient, "upsertContact" | "addInboundMessage">;
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

/** Why a reply caught mid-post by a stop is not posted again. */
export const POST_INTERRUPTED =
  "delivery unknown: bridge stopped while posting it to HighLevel, which may have taken it; not posted again (HighLevel does not deduplicate on altId)";

/**
 * Delivers one queued reply to HighLevel (docs/http.md, "Replies"): the contact by upsert
 * (idempotent: retried freely; a stop or start word sets or lifts its SMS DND), then the
 * inbound message, posted at most once: "posting" is committed before the call, and a
 * reply found "posting" is never posted again. A failure that proves HighLevel did not
 * take the message (no connection, a 4xx, 429, 502, 503) is retried like a status report;
 * one that leaves it unknown (a timeout, 500, 504) settles it as "delivery unknown".
 */
export async function deliverInbound(deps: DeliverDeps, id: number): Promise<void> {
  const row = deps.store.byId(id);
  if (!row || row.state !== "queued") return;
  let token: string | undefined;
  try {
    const valid = await deps.tokenService.forJob(row.locationId);
    if ("waitMs" in valid) return await later(deps, row, valid.waitMs, "the location's token is being renewed", false);
    token = valid.accessToken;
    const contactId = row.contactId ?? (await upsert(deps, row, token));
    if (!(await deps.commit(() => deps.store.markPosting(row.id, deps.now())))) return;
    await post(deps, { ...row, contactId }, token);
  } catch (error) {
    if (token && tokenRefused(error)) await deps.tokenService.rejected(row.locationId, token).catch(() => undefined);
    await failed(deps, row, error);
  }
}

async function upsert(deps: DeliverDeps, row: InboundRow, token: string): Promise<string> {
  const dnd = row.optOut || undefined;
  const contactId = await deps.crm.upsertContact(token, { locationId: row.locationId, phone: row.phone, dnd });
  await deps.commit(() => deps.store.setContact(row.id, contactId, deps.now()));
  return contactId;
}

/** Posts the message; its errors are told apart here, where it is known the call went. */
async function post(deps: DeliverDeps, row: InboundRow & { contactId: string }, token: string): Promise<void> {
  let messageId: string;
  try {
    messageId = await deps.crm.addInboundMessage(token, {
      contactId: row.contactId,
      message: row.text,
      altId: row.inboundId,
      date: new Date(row.receivedMs).toISOString(),
      conversationProviderId: deps.providerId,
    });
  } catch (error) {
    if (notTaken(error)) throw error;
    await deps.commit(() => deps.store.giveUp(row.id, `delivery unknown: ${errorMessage(error)}; not posted again`, deps.now()));
    deps.log.error(`reply ${row.inboundId} of location ${row.locationId}: delivery unknown (${errorMessage(error)}); not posted again`);
    return;
  }
  await storePosted(deps, row, messageId);
}

/**
 * HighLevel took it: its id is stored, tried again while the database refuses. It never
 * goes back to the queue from here: left "posting", it is settled at the next start.
 */
async function storePosted(deps: DeliverDeps, row: InboundRow, messageId: string): Promise<void> {
  const posted = `reply ${row.inboundId} from ${maskPhone(row.phone)} posted to location ${row.locationId} as message ${messageId}`;
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.commit(() => deps.store.posted(row.id, messageId, deps.now()));
      return deps.log.info(posted);
    } catch (error) {
      if (attempt + 1 >= STORE_TRIES) return deps.log.error(`${posted}, which could not be stored (${errorMessage(error)}): it stays "posting", never posted again`);
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
    await deps.commit(() => deps.store.giveUp(row.id, errorMessage(error), deps.now()));
    deps.log.error(`reply ${row.inboundId} of location ${row.locationId} not delivered to HighLevel: ${errorMessage(error)}`);
    return;
  }
  await later(deps, row, next.inMs, errorMessage(error), true);
}

async function later(deps: DeliverDeps, row: InboundRow, waitMs: number, reason: string, counted: boolean): Promise<void> {
  await deps.commit(() => deps.store.retryLater(row.id, deps.now() + waitMs, reason, deps.now(), counted));
  deps.log.debug(`reply ${row.inboundId}: ${reason}; trying again in ${waitMs} ms`);
}
