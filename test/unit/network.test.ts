import { describe, expect, test } from "vitest";
import { callFailure, hostOf, NetworkError, networkKind, type FailureKind } from "../../src/core/clients/network.ts";
import { CONNECT_TIMEOUT_CODE, neverSent, timedOut } from "../../src/core/retry.ts";

const socketError = (code: string | undefined, message: string) => Object.assign(new Error(message), code ? { code } : {});
const timeout = () => new DOMException("The operation was aborted due to timeout", "TimeoutError");

describe("networkKind", () => {
  test.each<[string | undefined, string, FailureKind]>([
    ["ENOTFOUND", "getaddrinfo ENOTFOUND api.cast.ph", "dns"],
    ["EAI_AGAIN", "getaddrinfo EAI_AGAIN api.cast.ph", "dns"],
    ["ECONNREFUSED", "connect ECONNREFUSED 1.2.3.4:443", "refused"],
    [CONNECT_TIMEOUT_CODE, "could not connect to api.cast.ph:443 within 10 s", "timeout"],
    ["ETIMEDOUT", "connect ETIMEDOUT 1.2.3.4:443", "timeout"],
    ["ECONNRESET", "read ECONNRESET", "reset"],
    ["EPIPE", "write EPIPE", "reset"],
    [undefined, "socket hang up", "reset"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames", "tls"],
    ["CERT_HAS_EXPIRED", "certificate has expired", "tls"],
    ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate", "tls"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate", "tls"],
    ["SELF_SIGNED_CERT_IN_CHAIN", "self-signed certificate in certificate chain", "tls"],
    ["EPROTO", "write EPROTO …:wrong version number:…", "tls"],
    ["EHOSTUNREACH", "connect EHOSTUNREACH 1.2.3.4:443", "other"],
    [undefined, "something else", "other"],
  ])("%s (%s) is %s", (code, message, kind) => {
    expect(networkKind(code, message)).toBe(kind);
  });
});

describe("NetworkError", () => {
  test.each<[Error, string]>([
    [socketError("ECONNREFUSED", "connect ECONNREFUSED 1.2.3.4:443"), "connection refused by api.cast.ph:443 (ECONNREFUSED)"],
    [socketError("ENOTFOUND", "getaddrinfo ENOTFOUND api.cast.ph"), "DNS lookup of api.cast.ph failed (ENOTFOUND)"],
    [socketError("ECONNRESET", "socket hang up"), "connection reset by api.cast.ph:443 (ECONNRESET)"],
    [socketError(undefined, "socket hang up"), "connection reset by api.cast.ph:443 (socket hang up)"],
    [socketError("CERT_HAS_EXPIRED", "certificate has expired"), "TLS handshake with api.cast.ph:443 failed: certificate has expired (CERT_HAS_EXPIRED)"],
    [
      socketError("EPROTO", "write EPROTO 40:error:0A00010B:SSL routines:tls_validate_record_header:wrong version number:x.c:77:\n"),
      "TLS handshake with api.cast.ph:443 failed: wrong version number (EPROTO)",
    ],
    [socketError(CONNECT_TIMEOUT_CODE, "could not connect to api.cast.ph:443 within 10 s"), "could not connect to api.cast.ph:443 within 10 s (timeout)"],
    [socketError("EHOSTUNREACH", "connect EHOSTUNREACH 1.2.3.4:443"), "request to api.cast.ph:443 failed: connect EHOSTUNREACH 1.2.3.4:443 (EHOSTUNREACH)"],
  ])("%s reads %j", (cause, message) => {
    expect(new NetworkError(cause, "api.cast.ph:443").message).toBe(message);
  });

  test("keeps what the retry rules read: the socket's code in its causes", () => {
    const refused = new NetworkError(socketError("ECONNREFUSED", "x"), "h:1");
    const reset = new NetworkError(socketError("ECONNRESET", "x"), "h:1");
    expect([refused instanceof TypeError, neverSent(refused), neverSent(reset)]).toEqual([true, true, false]);
  });
});

describe("callFailure", () => {
  test("our request timeout, however deep: a timeout with the host and the limit", () => {
    const error = new Error("[POST] …", { cause: timeout() });
    expect(timedOut(error)).toBe(true);
    expect(callFailure(error, "api.cast.ph:443", 30_000)).toEqual({ kind: "timeout", message: "no answer from api.cast.ph:443 within 30 s (timeout)" });
  });

  test("a NetworkError anywhere in the causes gives its kind and message", () => {
    const error = new Error("[GET] …: <no response>", { cause: new NetworkError(socketError("ENOTFOUND", "x"), "h.test:443") });
    expect(callFailure(error, "h.test:443", 1000)).toEqual({ kind: "dns", message: "DNS lookup of h.test failed (ENOTFOUND)" });
  });

  test("anything else is other, with its own message", () => {
    expect(callFailure(new RangeError("bad status"), "h:1", 1000)).toEqual({ kind: "other", message: "bad status" });
  });
});

test.each([
  ["https://api.cast.ph", "api.cast.ph:443"],
  ["http://127.0.0.1:8080/x", "127.0.0.1:8080"],
  ["http://[::1]/", "[::1]:80"],
])("hostOf(%s) is %s", (url, host) => {
  expect(hostOf(url)).toBe(host);
});
