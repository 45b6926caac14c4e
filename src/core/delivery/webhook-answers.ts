import { AppError } from "../../errors.ts";

/** What the webhook's sender is told: 200 with this status. Refusals are AppErrors (400, 429). */
export interface IntakeAnswer {
  status: "accepted" | "ok" | "ignored";
}

export function badWebhook(message: string): AppError {
  return new AppError("BAD_WEBHOOK", message);
}

/** Not stored, so not acknowledged: HighLevel retries only a 429, and comes back after Retry-After. */
export function notStored(what: string, retryAfterMs = 5000): AppError {
  return new AppError("NOT_STORED", `${what}; retry later`, { retryAfterMs });
}
