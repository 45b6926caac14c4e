import type { FailureCode } from "./failures.ts";
import type { JobState, Outcome } from "./job-rows.ts";

/** A due job as the queue sees it before it runs one: no payload read yet. */
export interface DueJob {
  id: number;
  state: JobState;
  locationId: string;
  /** 1 for each location's first due job, 2 for its second, … */
  turn: number;
}

/** What the carrier's receipt (or its absence) settles. */
export interface Receipt {
  outcome: Outcome;
  receipt: string;
  errorCode?: FailureCode;
  errorMessage?: string;
}

/** What a send attempt is committed with before it leaves. */
export interface Claim {
  idempotencyKey: string;
  apiKeyTag: string;
  /** The sender ID it goes with ("" : the gateway's default), for the message log. */
  senderId?: string;
  /**
   * The key and tag replace the job's (and its first attempt's time starts anew): none of
   * its attempts reached the gateway, and its key is of another API key or forgotten.
   */
  fresh?: boolean;
  /**
   * The gateway it goes through, for the message log: "cast" (the default), or a phone's
   * key, `android:<device id>` (phones.ts). Set with the key's tag, once.
   */
  gateway?: string;
  /** Its SMS parts, as bridge counts them: the first claim reserves them against the location's monthly cap. */
  parts?: number;
}

export interface Result {
  outcome: Outcome;
  errorCode?: FailureCode;
  errorMessage?: string;
  gatewayMessageId?: string;
  /** SMS parts, as the gateway counted them. */
  parts?: number;
}

/** Why a send goes back to the queue: each is recorded in the message log differently. */
export interface SendLater {
  /** A refusal that proves nothing was ever sent under the job's key: the next attempt takes a fresh one. */
  freshKey?: boolean;
  /** The gateway refused the API key itself: the message is held, not failed. */
  held?: boolean;
  /** No clear answer: the SMS may have left (an operator may then never retry it). */
  unclear?: boolean;
}
