import type { Job, Result } from "../../store/types.ts";
import type { Gateways, SendRequest } from "../clients/gateway.ts";
import { optOutKey } from "../opt-out-list.ts";
import type { Logger } from "../log.ts";
import { maskPhone } from "../mask.ts";
import type { UnsubscribedLists } from "./unsubscribed.ts";

/** What a message to an opted-out number fails with, and HighLevel is told (docs/cli.md, "Opt-outs"). */
export const OPTED_OUT = "recipient opted out";

type Plan = { request: SendRequest } | { result: Result };

/**
 * A send whose number is on Cast's unsubscribed list for its sender ID fails here, before
 * the gateway call, as one on the location's own list does (`opted_out`). The list is
 * Cast's, read where it is kept, never copied onto the location's: it is lifted in Cast.
 * `waitMs`: the key's list is not read yet; the job looks again then.
 */
export function unlessUnsubscribed<P extends Plan>(
  deps: { unsubscribed?: UnsubscribedLists; log: Logger; sms: Pick<Gateways, "driverOf"> },
  job: Job,
  plan: P,
): P | { result: Result } | { waitMs: number } {
  if (!("request" in plan) || !deps.unsubscribed) return plan;
  const { apiKey, senderId, to } = plan.request;
  // A phone sends with its SIM, not a Cast account: Cast's list is not its list.
  if (!deps.sms.driverOf(apiKey).account.unsubscribedList) return plan;
  const listed = deps.unsubscribed.check(apiKey, senderId, to);
  // The list is being read: the job stays queued and looks again, holding no worker.
  if (typeof listed === "number") return { waitMs: listed };
  if (!listed) return plan;
  const { messageId, locationId } = job.message;
  const sender = senderId || "the account's default";
  deps.log.info(`message ${messageId} of location ${locationId}: ${maskPhone(optOutKey(to))} is on Cast's unsubscribed list for sender ID ${sender}`);
  return { result: { outcome: "failed", errorCode: "opted_out", errorMessage: OPTED_OUT } };
}
