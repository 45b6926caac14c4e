import { describe, expect, test } from "vitest";
import { readAnswer, refused } from "../../src/core/clients/cast-answers.ts";
import { crmKind } from "../../src/core/clients/crm-answers.ts";
import { mayPassLater, nextReport, nextSend, type SendAttempt } from "../../src/core/retry-policy.ts";
import { AppError, CrmError, GatewayError, type CrmFailure, type GatewayFailure } from "../../src/errors.ts";
import { fixture } from "../helpers/fixtures.ts";

// Cast's error envelope, from its documented example (test/fixtures/cast/error-402.json), with each table's code.
const castError = (errorCode: string) => JSON.stringify({ ...fixture("cast", "error-402.json"), error_code: errorCode });

function kindOf(fn: () => unknown): GatewayFailure | "none" {
  try {
    fn();
    return "none";
  } catch (error) {
    return error instanceof GatewayError ? error.failure : "none";
  }
}

describe("what Cast's answer to a send means (docs/services/cast-api.md, error codes)", () => {
  test.each<[number, string, GatewayFailure]>([
    [400, "VALIDATION_ERROR", "rejected"],
    [401, "INVALID_API_KEY", "key_refused"],
    [402, "INSUFFICIENT_CREDITS", "out_of_credit"],
    [402, "CREDIT_LIMIT_REACHED", "out_of_credit"],
    [403, "API_KEY_REVOKED", "key_refused"],
    [403, "USER_INACTIVE", "key_refused"],
    [403, "IP_NOT_WHITELISTED", "account_held"],
    [403, "CHANNEL_NOT_ALLOWED", "account_held"],
    [429, "RATE_LIMIT_EXCEEDED", "rate_limited"],
    [500, "INTERNAL_ERROR", "unknown"],
    [503, "SERVICE_UNAVAILABLE", "unknown"],
  ])("%d %s: %s", (status, code, kind) => {
    expect(kindOf(() => readAnswer(status, castError(code), null))).toBe(kind);
  });

  test("a 200 with success:false is this message refused; one without a message id is unclear", () => {
    expect(kindOf(() => readAnswer(200, JSON.stringify({ success: false, error: "x", error_code: "INVALID_API_KEY" }), null))).toBe("rejected");
    expect(kindOf(() => readAnswer(200, JSON.stringify({ success: true }), null))).toBe("unknown");
  });
});

describe("what Cast's answer to a GET means", () => {
  const answer = (status: number, code: string) => ({ status, text: castError(code), body: JSON.parse(castError(code)) as Record<string, unknown> });
  test.each<[number, string, boolean, GatewayFailure]>([
    [404, "NOT_FOUND", true, "not_found"],
    [404, "NOT_FOUND", false, "rejected"],
    [401, "INVALID_API_KEY", false, "key_refused"],
    [402, "CREDIT_LIMIT_REACHED", false, "out_of_credit"],
    [403, "IP_NOT_WHITELISTED", false, "account_held"],
    [500, "INTERNAL_ERROR", true, "unknown"],
    [200, "", false, "unknown"],
  ])("%d %s (a status look-up: %s): %s", (status, code, lookedUp, kind) => {
    expect(refused("balance call", answer(status, code), lookedUp).failure).toBe(kind);
  });
});

describe("what HighLevel's answer means", () => {
  test.each<["token" | "status" | "bearer", number, string, CrmFailure]>([
    ["token", 400, '{"error":"invalid_grant","error_description":"Invalid grant: refresh token is invalid"}', "grant_invalid"],
    ["token", 401, '{"error":"invalid_grant"}', "grant_invalid"],
    ["token", 401, '{"error":"invalid_client"}', "rejected"],
    ["token", 429, "{}", "rate_limited"],
    ["token", 502, "", "unclear"],
    ["bearer", 401, '{"message":"Invalid JWT"}', "token_refused"],
    ["bearer", 403, '{"message":"The token does not have access to this location."}', "rejected"],
    ["bearer", 400, "{}", "rejected"],
    ["bearer", 404, "{}", "rejected"],
    ["status", 403, "{}", "unclear"],
    ["status", 408, "", "unclear"],
    ["status", 422, "{}", "rejected"],
    ["status", 503, "", "unclear"],
  ])("%s call, %d %s: %s", (endpoint, status, text, kind) => {
    expect(crmKind(endpoint, { status, text })).toBe(kind);
  });
});

describe("a failed send (nextSend)", () => {
  const now = 1_000_000_000;
  const job: SendAttempt = { attempts: 0, createdAt: now - 1000, requeuedAt: null, firstSentAt: now - 1000, unclear: false };
  const limits = { now, holdMaxMs: 3_600_000, holdLookMs: 60_000, sendBackoffMs: 1000, resendWindowMs: 20 * 3_600_000 };
  const gw = (kind: GatewayFailure, options: { keySpent?: boolean; retryAfterMs?: number } = {}) => new GatewayError(kind, kind, options);

  test.each<[string, unknown, Partial<SendAttempt>, object]>([
    ["this message refused", gw("rejected"), {}, { verdict: "fail", code: "gateway_rejected", gaveUp: false }],
    ["not a gateway's error", new Error("boom"), {}, { verdict: "fail", code: "send_failed", gaveUp: false }],
    ["the key refused", gw("key_refused"), {}, { verdict: "hold", probe: "balance", at: now + 60_000, freshKey: true }],
    ["no credit", gw("out_of_credit"), {}, { verdict: "hold", probe: "send", freshKey: true }],
    ["the account held", gw("account_held"), {}, { verdict: "hold", probe: "send", freshKey: true }],
    ["the key refused after an unclear attempt: its key stays", gw("key_refused"), { unclear: true }, { verdict: "hold", freshKey: false }],
    ["held with 10 s of SMS_HOLD_MAX left", gw("key_refused"), { createdAt: now - 3_590_000 }, { verdict: "hold", at: now + 10_000 }],
    ["no clear answer: the same key", gw("unknown"), {}, { verdict: "retry", at: now + 1000, freshKey: false, unclear: true, paced: false }],
    ["never connected", gw("unreachable"), { attempts: 2 }, { verdict: "retry", at: now + 4000, freshKey: false, unclear: false }],
    ["a 429: at least its Retry-After", gw("rate_limited", { retryAfterMs: 5000 }), {}, { verdict: "retry", at: now + 5000, paced: true }],
    ["a refusal replayed from the cache: a new key", gw("key_refused", { keySpent: true }), {}, { verdict: "retry", freshKey: true, unclear: false }],
    ["a 503 replayed from the cache: a new key", gw("unknown", { keySpent: true }), {}, { verdict: "retry", freshKey: true, unclear: false }],
    ["past SMS_HOLD_MAX", gw("unknown"), { createdAt: now - 3_600_000 }, { verdict: "fail", code: "gateway_unknown", gaveUp: true }],
    ["a replayed refusal past SMS_HOLD_MAX", gw("key_refused", { keySpent: true }), { createdAt: now - 3_600_000 }, { verdict: "fail", code: "gateway_rejected" }],
    ["an operator's retry starts SMS_HOLD_MAX anew", gw("unknown"), { createdAt: now - 3_600_000, requeuedAt: now - 1000 }, { verdict: "retry" }],
    ["past the gateway's memory of the key", gw("unreachable"), { firstSentAt: now - 21 * 3_600_000, createdAt: now }, { verdict: "fail", code: "gateway_unreachable" }],
  ])("%s", (_, error, attempt, verdict) => {
    expect(nextSend(error, { ...job, ...attempt }, limits)).toMatchObject(verdict);
  });

  test("the window is the gateway driver's: a driver without idempotency (0) never repeats an attempt that may have sent", () => {
    expect(nextSend(gw("unknown"), job, { ...limits, resendWindowMs: 0 })).toMatchObject({ verdict: "fail", code: "gateway_unknown", gaveUp: true });
    // A window of 2 h: the same failure an hour and a half in is tried again, three hours in it is not.
    const twoHours = { ...limits, resendWindowMs: 2 * 3_600_000 };
    expect(nextSend(gw("unknown"), { ...job, firstSentAt: now - 90 * 60_000 }, twoHours)).toMatchObject({ verdict: "retry", freshKey: false });
    expect(nextSend(gw("unknown"), { ...job, firstSentAt: now - 3 * 3_600_000 }, twoHours)).toMatchObject({ verdict: "fail", code: "gateway_unknown" });
  });
});

describe("a failed status report (nextReport)", () => {
  const crm = (kind: CrmFailure, retryAfterMs?: number) => new CrmError(kind, kind, { retryAfterMs });
  test.each<[string, unknown, number, object]>([
    ["a refused token: tried again", crm("token_refused"), 0, { verdict: "retry", inMs: 1000 }],
    ["an unclear answer, the 4th time", crm("unclear"), 3, { verdict: "retry", inMs: 8000 }],
    ["a 429 asking for longer than the back-off", crm("rate_limited", 30_000), 0, { verdict: "retry", inMs: 30_000 }],
    ["a refusal", crm("rejected"), 0, { verdict: "fail" }],
    ["a dead grant", crm("grant_invalid"), 0, { verdict: "fail" }],
    ["no answer, the last try", new Error("fetch failed"), 149, { verdict: "fail" }],
    ["the location gone", new AppError("NO_TOKEN", "no token for location: loc-1"), 0, { verdict: "fail" }],
  ])("%s", (_, error, attempts, verdict) => {
    expect(nextReport(error, attempts, {})).toEqual(verdict);
  });
});

describe("a location-token call that may pass later (mayPassLater)", () => {
  test.each<[string, unknown, boolean]>([
    ["no answer", new Error("fetch failed"), true],
    ["a 429", new CrmError("rate_limited", "x"), true],
    ["a 5xx", new CrmError("unclear", "x"), true],
    ["a refusal", new CrmError("rejected", "x"), false],
    ["a refused token", new CrmError("token_refused", "x"), false],
  ])("%s: %s", (_, error, passes) => {
    expect(mayPassLater(error)).toBe(passes);
  });
});
