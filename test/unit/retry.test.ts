import { describe, expect, test } from "vitest";
import { AppError, CrmError } from "../../src/errors.ts";
import { reportRetryable } from "../../src/core/retry-policy.ts";
import { crmKind } from "../../src/core/clients/crm-answers.ts";
import { CONNECT_TIMEOUT_CODE, delayMs, neverSent, pRetryOptions, RETRY, retryAfterMs, timedOut } from "../../src/core/retry.ts";
import { needsRefresh } from "../../src/core/installs/tokens.ts";

// A whole second, so an HTTP date (second resolution) lands exactly.
const now = Date.UTC(2025, 5, 1, 12, 0, 0);
const httpDate = (offsetMs: number) => new Date(now + offsetMs).toUTCString();

describe("retryAfterMs", () => {
  test.each<[string | null | undefined, number | undefined]>([
    ["0", 0],
    ["5", 5000],
    ["30", 30_000],
    ["60", 60_000],
    [httpDate(10_000), 10_000],
    [httpDate(1000), 1000],
    [httpDate(-10_000), 0],
    [new Date(0).toUTCString(), 0],
    ["61", 60_000],
    ["999999", 60_000],
    [httpDate(3_600_000), 60_000],
    ["1.5", 1500],
    ["0.25", 250],
    [" 2 ", 2000],
    ["-1", undefined],
    ["1.5.0", undefined],
    ["abc", undefined],
    ["", undefined],
    [null, undefined],
    [undefined, undefined],
  ])("%j → %j", (header, expected) => {
    expect(retryAfterMs(header, now)).toBe(expected);
  });

  test.each<[string, number, number]>([
    ["999999", 5000, 5000],
    ["3", 5000, 3000],
    [httpDate(10_000), 2000, 2000],
    ["0", 0, 0],
  ])("%j with maxMs %d → %d", (header, maxMs, expected) => {
    expect(retryAfterMs(header, now, maxMs)).toBe(expected);
  });
});

const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });
const nested = (inner: unknown) => new TypeError("fetch failed", { cause: new Error("request failed", { cause: inner }) });
const timeout = () => new DOMException("The operation was aborted due to timeout", "TimeoutError");
const abort = () => new DOMException("This operation was aborted", "AbortError");
const cyclic = () => {
  const a: { name: string; cause?: unknown } = { name: "A" };
  a.cause = { name: "B", cause: a };
  return a;
};

describe("neverSent", () => {
  test.each<[string, unknown, boolean]>([
    ["ECONNREFUSED two levels down", nested(withCode("ECONNREFUSED")), true],
    ["ECONNREFUSED at the top", withCode("ECONNREFUSED"), true],
    ["ENOTFOUND two levels down", nested(withCode("ENOTFOUND")), true],
    ["EAI_AGAIN", nested(withCode("EAI_AGAIN")), true],
    ["EHOSTUNREACH", nested(withCode("EHOSTUNREACH")), true],
    ["ENETUNREACH", nested(withCode("ENETUNREACH")), true],
    ["our connect timeout", nested(withCode(CONNECT_TIMEOUT_CODE)), true],
    ["ECONNRESET (the request may have left)", nested(withCode("ECONNRESET")), false],
    ["EPIPE", nested(withCode("EPIPE")), false],
    ["UND_ERR_SOCKET", nested(withCode("UND_ERR_SOCKET")), false],
    ["a timeout", nested(timeout()), false],
    ["a plain error", new Error("boom"), false],
    ["a numeric code", Object.assign(new Error("x"), { code: 111 }), false],
    ["a cyclic cause chain", cyclic(), false],
    ["null", null, false],
    ["undefined", undefined, false],
    ["a string", "ECONNREFUSED", false],
  ])("%s → %s", (_, error, expected) => {
    expect(neverSent(error)).toBe(expected);
  });
});

describe("timedOut", () => {
  test.each<[string, unknown, boolean]>([
    ["a TimeoutError cause", new Error("request failed", { cause: timeout() }), true],
    ["a TimeoutError two levels down", nested(timeout()), true],
    ["a TimeoutError itself", timeout(), true],
    ["an AbortError", nested(abort()), false],
    ["ECONNREFUSED", nested(withCode("ECONNREFUSED")), false],
    ["a plain error", new Error("timeout"), false],
    ["a cyclic cause chain", cyclic(), false],
    ["null", null, false],
    ["a string", "TimeoutError", false],
  ])("%s → %s", (_, error, expected) => {
    expect(timedOut(error)).toBe(expected);
  });
});

describe("reportRetryable", () => {
  // As the CRM client reads the status call's answer.
  const crm = (status: number) => new CrmError(crmKind("status", { status, text: "{}" }), `status endpoint returned ${status}`);

  test.each<[number, boolean]>([
    [401, true],
    [403, true],
    [408, true],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [400, false],
    [404, false],
    [422, false],
  ])("CrmError with HTTP %d → %s", (status, expected) => {
    expect(reportRetryable(crm(status))).toBe(expected);
  });

  test.each<[string, unknown, boolean]>([
    ["AppError NO_TOKEN", new AppError("NO_TOKEN", "no token for location: loc-1"), false],
    ["AppError REFRESH_FAILED", new AppError("REFRESH_FAILED", "refresh token failed: boom"), true],
    ["AppError STORE_FAILED", new AppError("STORE_FAILED", "failed to update token in store: boom"), true],
    ["a plain Error (network)", new Error("fetch failed"), true],
    ["a timeout", nested(timeout()), true],
  ])("%s → %s", (_, error, expected) => {
    expect(reportRetryable(error)).toBe(expected);
  });
});

describe("needsRefresh", () => {
  const minute = 60_000;
  test.each<[string, number, boolean]>([
    ["4:59 left", 4 * minute + 59_000, true],
    ["1 ms short of 5:00", 5 * minute - 1, true],
    ["exactly 5:00 left", 5 * minute, false],
    ["6 minutes left", 6 * minute, false],
    ["a day left", 24 * 60 * minute, false],
    ["expiring now", 0, true],
    ["expired a minute ago", -minute, true],
  ])("%s → %s", (_, remaining, expected) => {
    expect(needsRefresh(now + remaining, now)).toBe(expected);
  });
});

describe("the retry policies", () => {
  test("a status report is tried for about a day: 150 tries, 1 s doubling up to 10 minutes", () => {
    const waits = Array.from({ length: RETRY.report.tries - 1 }, (_, retry) => delayMs(RETRY.report, retry));
    expect(waits.slice(0, 4)).toEqual([1000, 2000, 4000, 8000]);
    expect(Math.max(...waits)).toBe(600_000);
    const hours = waits.reduce((a, b) => a + b, 0) / 3_600_000;
    expect(hours).toBeGreaterThan(22);
    expect(hours).toBeLessThan(25);
  });

  test("a test's shorter first wait keeps the policy's shape", () => {
    expect(delayMs(RETRY.send, 3, 10)).toBe(80);
    expect(delayMs(RETRY.send, 30, 10)).toBe(60_000);
  });

  test.each([
    [RETRY.storeResult, { retries: Infinity, minTimeout: 100, maxTimeout: 30_000 }],
    [RETRY.gatewayCall, { retries: 4, minTimeout: 1000, maxTimeout: 60_000 }],
    [RETRY.crmRateLimit, { retries: 5, minTimeout: 1000, maxTimeout: 60_000 }],
  ])("p-retry options of %o", (policy, options) => {
    expect(pRetryOptions(policy)).toEqual(options);
  });
});
