import { describe, expect, test } from "vitest";
import { networkErrorKind } from "../../src/core/clients/probe.ts";

/** An error as the transport throws it: "fetch failed" with the socket's error as its cause. */
function failed(cause: object): Error {
  return new TypeError("fetch failed", { cause: Object.assign(new Error("socket"), cause) });
}

describe("networkErrorKind", () => {
  test.each([
    [failed({ code: "ENOTFOUND" }), "DNS"],
    [failed({ code: "EAI_AGAIN" }), "DNS"],
    [failed({ code: "ECONNREFUSED" }), "refused"],
    [failed({ code: "BRIDGE_CONNECT_TIMEOUT" }), "timeout"],
    [Object.assign(new Error("aborted"), { name: "TimeoutError" }), "timeout"],
    [failed({ code: "ECONNRESET" }), "reset"],
    [failed({ code: "CERT_HAS_EXPIRED" }), "TLS"],
    [failed({ code: "DEPTH_ZERO_SELF_SIGNED_CERT" }), "TLS"],
    [failed({ code: "ERR_TLS_CERT_ALTNAME_INVALID" }), "TLS"],
    [failed({ code: "EHOSTUNREACH" }), "unreachable"],
    [new Error("something else"), "network"],
  ])("%s is %s", (error, kind) => {
    expect(networkErrorKind(error)).toBe(kind);
  });
});
