import { callRemote } from "./transport.ts";

export type Reach = { ok: true; status: number; ms: number } | { ok: false; kind: NetworkErrorKind; detail: string };

export type NetworkErrorKind = "DNS" | "refused" | "TLS" | "timeout" | "reset" | "unreachable" | "network";

/**
 * Whether `url` answers HTTP at all within `timeoutMs`: any status counts, since the
 * question is the network path (DNS, firewall, proxy, TLS), not the API.
 */
export async function reach(url: string, timeoutMs: number): Promise<Reach> {
  const started = performance.now();
  try {
    const res = await callRemote(url, { method: "GET", timeout: timeoutMs });
    return { ok: true, status: res.status, ms: Math.round(performance.now() - started) };
  } catch (error) {
    const kind = networkErrorKind(error);
    const code = errorCodes(error)[0];
    return { ok: false, kind, detail: kind === "timeout" ? `no answer within ${timeoutMs / 1000} s` : (code ?? deepestMessage(error)) };
  }
}

const KINDS: [RegExp, NetworkErrorKind][] = [
  [/^(ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME)$/, "DNS"],
  [/^ECONNREFUSED$/, "refused"],
  [/^(ETIMEDOUT|BRIDGE_CONNECT_TIMEOUT|UND_ERR_CONNECT_TIMEOUT|TimeoutError|AbortError)$/, "timeout"],
  [/^(ECONNRESET|EPIPE|ECONNABORTED|UND_ERR_SOCKET)$/, "reset"],
  [/^(EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN)$/, "unreachable"],
  [/CERT|TLS|SSL|EPROTO|SELF_SIGNED|UNABLE_TO_VERIFY/, "TLS"],
];

/** What kind of network failure an error is: "fetch failed" says nothing an operator can act on. */
export function networkErrorKind(error: unknown): NetworkErrorKind {
  for (const code of errorCodes(error)) {
    for (const [pattern, kind] of KINDS) if (pattern.test(code)) return kind;
  }
  return "network";
}

/** The codes (and error names) along the error's cause chain, innermost first. */
function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let e: unknown = error, depth = 0; e && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, name } = e as { code?: unknown; name?: unknown };
    if (typeof code === "string") codes.unshift(code);
    if (name === "TimeoutError" || name === "AbortError") codes.unshift(name);
  }
  return codes;
}

function deepestMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) message = e.message;
  return message;
}
