import { wallClock } from "../clock.ts";
import { GatewayError } from "../../errors.ts";
import { neverSent, retryAfterMs as parseRetryAfter } from "../retry.ts";
import { callFailure, hostOf } from "./network.ts";
import { observed, type CallObserver } from "./observe.ts";
import { callRemote } from "./transport.ts";

export interface UnsubscribedOptions {
  apiUrl: string;
  /** The read is made before a send, which waits for it: shorter than a send's 30 s. */
  timeoutMs?: number;
  /** Told of every HTTP call, as cast.ts's calls are (outages, metrics). */
  observe?: CallObserver;
  /** Told of a 429 with the wait Cast asked for: its per-address limit counts this call too. */
  onRateLimited?: (retryAfterMs: number) => void;
  /** The source address of the call (CAST_LOCAL_ADDRESS), as cast.ts's calls. */
  localAddress?: string;
}

/** A number that opted out through one of Cast's unsubscribe links, and the sender ID it opted out of. */
export interface Unsubscribed {
  /** As Cast lists it (its example: E.164). */
  phone: string;
  senderId: string;
}

/** Reads the key's account's unsubscribed list; throws GatewayError. */
export type ReadUnsubscribed = (apiKey: string) => Promise<Unsubscribed[]>;

/**
 * Cast's `GET /api/v1/account/unsubscribed`: every number that opted out of the key's
 * account, each with the sender ID it opted out of (docs/services/cast-api.md, "Account"; the answer's
 * shape: test/fixtures/cast/unsubscribed-200.json). One call covers all the account's sender IDs.
 */
export function createUnsubscribedClient(options: UnsubscribedOptions): ReadUnsubscribed {
  const timeout = options.timeoutMs ?? 10_000;
  const host = hostOf(options.apiUrl);
  const call = { remote: "cast" as const, operation: "unsubscribed", host, timeoutMs: timeout, observe: options.observe };

  return async (apiKey) => {
    let res;
    try {
      res = await observed(call, () =>
        callRemote("/api/v1/account/unsubscribed", {
          baseURL: options.apiUrl,
          method: "GET",
          headers: { "X-API-Key": apiKey, Accept: "application/json" },
          timeout,
          localAddress: options.localAddress,
        }),
      );
    } catch (error) {
      const failed = callFailure(error, host, timeout);
      throw new GatewayError(neverSent(error) ? "unreachable" : "unknown", `gateway unsubscribed call failed: ${failed.message}`, { cause: error });
    }
    const text = res._data ?? "";
    if (res.status === 429) {
      const retryAfterMs = parseRetryAfter(res.headers.get("retry-after"), wallClock());
      options.onRateLimited?.(retryAfterMs ?? 1000);
      throw new GatewayError("rate_limited", "gateway rate limit (429)", { httpStatus: 429, retryAfterMs });
    }
    const data = (parseBody(text) as { data?: unknown } | undefined)?.data;
    if (res.status !== 200 || !Array.isArray(data)) {
      throw new GatewayError("rejected", `gateway unsubscribed call answered ${res.status}: ${text.slice(0, 200)}`, { httpStatus: res.status });
    }
    return readEntries(data);
  };
}

/** The entries that name a number and a sender ID; `unsubscribed_at` and `ip` (may be null) are not needed. */
function readEntries(data: unknown[]): Unsubscribed[] {
  return (data as Record<string, unknown>[]).flatMap((entry) =>
    typeof entry?.phone === "string" && typeof entry.sender_id === "string" ? [{ phone: entry.phone, senderId: entry.sender_id }] : [],
  );
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
