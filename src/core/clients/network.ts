import { errorMessage } from "../../errors.ts";
import { CONNECT_TIMEOUT_CODE, timedOut } from "../retry.ts";

/** What kind of failure a call to a remote met; "http": it answered with a 5xx. */
export type FailureKind = "dns" | "refused" | "tls" | "timeout" | "reset" | "http" | "other";

/**
 * A request that got no answer, named by what went wrong and where, e.g.
 * `connection refused by api.cast.ph:443 (ECONNREFUSED)`: "fetch failed" told an
 * operator nothing about whether to look at DNS, a firewall or a certificate. A
 * TypeError, as fetch's own is; the socket's error stays its `cause`, so the retry
 * rules (retry.ts) read the same codes as before.
 */
export class NetworkError extends TypeError {
  readonly kind: FailureKind;

  constructor(cause: Error, host: string) {
    const code = codeOf(cause);
    const kind = networkKind(code, cause.message);
    super(describe(kind, code, cause, host), { cause });
    this.kind = kind;
  }
}

/** The kind of a socket error, from its code (and Node's "socket hang up", which may have none). */
export function networkKind(code: string | undefined, message = ""): FailureKind {
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_FAIL" || code === "EAI_NODATA") return "dns";
  if (code === "ECONNREFUSED") return "refused";
  if (code === CONNECT_TIMEOUT_CODE || code === "ETIMEDOUT") return "timeout";
  if (code === "ECONNRESET" || code === "EPIPE" || /socket hang up/i.test(message)) return "reset";
  if (code && TLS_CODES.some((prefix) => code.startsWith(prefix))) return "tls";
  return "other";
}

/**
 * How a call failed when no answer came: its kind and a message naming the host.
 * Our own request timeout (an aborted request) is told apart here, where the limit is known.
 */
export function callFailure(error: unknown, host: string, timeoutMs: number): { kind: FailureKind; message: string } {
  if (timedOut(error)) return { kind: "timeout", message: `no answer from ${host} within ${timeoutMs / 1000} s (timeout)` };
  const network = findNetworkError(error);
  if (network) return { kind: network.kind, message: network.message };
  return { kind: "other", message: errorMessage(error) };
}

/** `host:port` of a URL, the port spelled out even when it is the scheme's default. */
export function hostOf(url: string | URL): string {
  const u = typeof url === "string" ? new URL(url) : url;
  return `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
}

/** Certificate and handshake failures: Node's and OpenSSL's codes. */
const TLS_CODES = ["ERR_TLS", "ERR_SSL", "CERT_", "UNABLE_TO_", "DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN", "EPROTO", "HOSTNAME_MISMATCH"];

function describe(kind: FailureKind, code: string | undefined, error: Error, host: string): string {
  const tag = code ? ` (${code})` : "";
  const cause = { message: readable(error.message) };
  switch (kind) {
    case "dns":
      return `DNS lookup of ${host.replace(/:\d+$/, "")} failed${tag}`;
    case "refused":
      return `connection refused by ${host}${tag}`;
    case "timeout":
      return code === CONNECT_TIMEOUT_CODE ? `${cause.message} (timeout)` : `connection to ${host} timed out${tag}`;
    case "reset":
      return `connection reset by ${host}${code ? tag : ` (${cause.message})`}`;
    case "tls":
      return `TLS handshake with ${host} failed: ${cause.message}${tag}`;
    default:
      return `request to ${host} failed: ${cause.message}${tag}`;
  }
}

/** OpenSSL's `write EPROTO 40…:error:0A00010B:SSL routines:func:wrong version number:file.c:77:` says "wrong version number". */
function readable(message: string): string {
  return /error:[0-9A-F]+:[^:]*:[^:]*:([^:]+)/.exec(message)?.[1] ?? message.trim();
}

function codeOf(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

function findNetworkError(error: unknown): NetworkError | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof NetworkError) return current;
    current = current.cause;
  }
  return undefined;
}
