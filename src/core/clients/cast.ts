import { wallClock } from "../clock.ts";
import pRetry from "p-retry";
import { GatewayError } from "../../errors.ts";
import { neverSent, pRetryOptions, RETRY, retryAfterMs as parseRetryAfter } from "../retry.ts";
import { callFailure, hostOf } from "./network.ts";
import { observed, type CallObserver } from "./observe.ts";
import { parseBody, rateLimited, readAnswer, readLogPage, readStatus, refused, replayed, type CastAnswer } from "./cast-answers.ts";
import type { DeliveryStatus, GatewayDriver, LogPage, LogQuery, SenderId, SendRequest, SendResult } from "./gateway.ts";
import { callRemote } from "./transport.ts";

export interface GatewayOptions {
  apiUrl: string;
  timeoutMs?: number;
  /** Retries of a connection that was never made. */
  retries?: number;
  /** First back-off when the gateway gives no Retry-After. */
  retryDelayMs?: number;
  /** Told of every HTTP call: its time and how it ended (outages, metrics). */
  observe?: CallObserver;
  /** Told of every balance a key's balance call returned. */
  onBalance?: (apiKey: string, credits: number) => void;
  /**
   * Told of every 429, whatever the call, with the wait Cast asked for (1 s when it gave
   * none): its per-address limit counts every request of the process, so all of them wait.
   */
  onRateLimited?: (retryAfterMs: number) => void;
  /** The source address of every request to Cast (CAST_LOCAL_ADDRESS): its per-address limit counts by it. */
  localAddress?: string;
}

/** Cast.ph's own limit on one message's text. */
const MAX_MESSAGE_LENGTH = 10_000;

/** What one request to Cast carries besides its path. */
interface CastRequest {
  headers?: Record<string, string>;
  body?: string;
  query?: Record<string, number>;
}

/**
 * Cast remembers an idempotency key for 24 h (docs/services/cast-api.md): a retry within that
 * is answered from its cache if the first attempt went. bridge stops retrying well before.
 */
const IDEMPOTENCY_WINDOW_MS = 20 * 60 * 60_000;

/** Cast.ph, the Philippine SMS gateway: the driver of every API key (an account's), the default. */
export function createCastClient(options: GatewayOptions): GatewayDriver {
  const cast = castCalls(options);
  return {
    kind: "cast",
    maxMessageLength: MAX_MESSAGE_LENGTH,
    // The scheduler's shared budgets are Cast's own limits: per address and per key.
    budget: undefined,
    receipts: { source: "log", waitMs: undefined, unknownWithoutReceipt: false },
    idempotencyWindowMs: IDEMPOTENCY_WINDOW_MS,
    account: { credits: true, senderIds: true, unsubscribedList: true },
    // Its keys are secrets: the message log records the gateway's name.
    gatewayOf: () => "cast",
    balance: (apiKey) => balance(cast, apiKey),
    senderIds: (apiKey) => senderIds(cast, apiKey),
    status: (apiKey, messageId) => status(cast, apiKey, messageId),
    logs: (apiKey, page) => logs(cast, apiKey, page),
    send: (req) => send(cast, req),
  };
}

/** How one client talks to Cast: its options, and the calls every method goes through. */
interface CastCalls {
  options: GatewayOptions;
  host: string;
  timeoutMs: number;
  /** The one place that talks HTTP to Cast: base URL, key, timeout, the observer; any status is an answer. */
  request(operation: string, path: string, init: CastRequest & { method: "GET" | "POST"; apiKey: string }): ReturnType<typeof callRemote>;
  /** A GET with the key: the answer however it went, or a GatewayError when none came (or a 429). */
  get(operation: string, path: string, apiKey: string, query?: Record<string, number>): Promise<CastAnswer>;
}

function castCalls(options: GatewayOptions): CastCalls {
  const timeout = options.timeoutMs ?? 30_000;
  const host = hostOf(options.apiUrl);
  const call = (operation: string) => ({ remote: "cast" as const, operation, host, timeoutMs: timeout, observe: options.observe });

  const request: CastCalls["request"] = async (operation, path, init) => {
    const res = await observed(call(operation), () =>
      callRemote(path, {
        baseURL: options.apiUrl,
        method: init.method,
        headers: { "X-API-Key": init.apiKey, Accept: "application/json", ...init.headers },
        body: init.body,
        query: init.query,
        timeout,
        localAddress: options.localAddress,
      }),
    );
    if (res.status === 429) options.onRateLimited?.(parseRetryAfter(res.headers.get("retry-after"), wallClock()) ?? 1000);
    return res;
  };

  const get: CastCalls["get"] = async (operation, path, apiKey, query) => {
    let res;
    try {
      res = await request(operation, path, { method: "GET", apiKey, query });
    } catch (error) {
      const failed = callFailure(error, host, timeout);
      throw new GatewayError(neverSent(error) ? "unreachable" : "unknown", `gateway ${operation} call failed: ${failed.message}`, { cause: error });
    }
    if (res.status === 429) throw rateLimited(res.headers.get("retry-after"));
    const text = res._data ?? "";
    return { status: res.status, text, body: parseBody(text) };
  };

  return { options, host, timeoutMs: timeout, request, get };
}

/** The account's credits (`GET /api/v1/account/balance`): also how a held key is probed. Throws GatewayError. */
async function balance(cast: CastCalls, apiKey: string): Promise<number> {
  const res = await cast.get("balance", "/api/v1/account/balance", apiKey);
  const credits = (res.body as { credits?: unknown } | undefined)?.credits;
  if (res.status !== 200 || typeof credits !== "number") throw refused("balance call", res);
  cast.options.onBalance?.(apiKey, credits);
  return credits;
}

/** The sender IDs approved on the key's account. Throws GatewayError. */
async function senderIds(cast: CastCalls, apiKey: string): Promise<SenderId[]> {
  const res = await cast.get("senderIds", "/api/v1/account/sender-ids", apiKey);
  const list = (res.body as { sender_ids?: unknown } | undefined)?.sender_ids;
  if (res.status !== 200 || !Array.isArray(list)) throw refused("sender-ids call", res);
  return (list as Record<string, unknown>[])
    .filter((entry) => typeof entry?.sender_id === "string")
    .map((entry) => ({
      senderId: entry.sender_id as string,
      label: typeof entry.label === "string" ? entry.label : "",
      channel: typeof entry.channel === "string" ? entry.channel : "sms",
    }));
}

/** A sent message's delivery status; throws GatewayError ("not_found" while Cast has no record of it yet, too). */
async function status(cast: CastCalls, apiKey: string, messageId: string): Promise<DeliveryStatus> {
  const res = await cast.get("status", `/api/v1/sms/status/${encodeURIComponent(messageId)}`, apiKey);
  const found = res.status === 200 ? readStatus(res.body) : undefined;
  if (!found) throw refused("status call", res, true);
  return found;
}

/**
 * One page (at most 500 entries) of the account's log, newest first, with each
 * message's status (`GET /api/v1/sms/logs`): one call collects many receipts. Throws GatewayError.
 */
async function logs(cast: CastCalls, apiKey: string, page: LogQuery): Promise<LogPage> {
  const res = await cast.get("logs", "/api/v1/sms/logs", apiKey, { limit: page.limit, offset: page.offset });
  const body = res.body as { logs?: unknown } | undefined;
  if (res.status !== 200 || !Array.isArray(body?.logs)) throw refused("logs call", res);
  return readLogPage(body.logs as unknown[]);
}

/**
 * Sends one SMS, retrying only a connection never made. A 429 is not waited out here:
 * the caller waits for it in the queue, holding no worker.
 */
async function send(cast: CastCalls, req: SendRequest): Promise<SendResult> {
  const { options } = cast;
  let attempts = 0;
  try {
    return await pRetry(() => attempt(cast, req), {
      ...pRetryOptions(RETRY.gatewayCall, options.retryDelayMs),
      ...(options.retries !== undefined && { retries: options.retries }),
      shouldRetry: ({ error }) => error instanceof GatewayError && error.failure === "unreachable",
      onFailedAttempt: (context) => {
        attempts = context.attemptNumber;
      },
    });
  } catch (error) {
    // Retried and still failing: say so in the status the CRM shows. Everything the
    // failure policy reads stays (the error_code decides how a hold is probed).
    if (attempts < 2 || !(error instanceof GatewayError)) throw error;
    const { httpStatus, keySpent, retryAfterMs, gatewayCode } = error;
    const message = `${error.message} (${attempts} attempts)`;
    throw new GatewayError(error.failure, message, { httpStatus, keySpent, retryAfterMs, gatewayCode, cause: error });
  }
}

/** One attempt. Throws GatewayError; "unreachable" is the one retried at once. */
async function attempt(cast: CastCalls, req: SendRequest): Promise<SendResult> {
  let res;
  try {
    res = await cast.request("send", "/api/v1/sms/send", {
      method: "POST",
      apiKey: req.apiKey,
      headers: { "X-Idempotency-Key": req.idempotencyKey, "Content-Type": "application/json" },
      body: JSON.stringify({ to: req.to, message: req.message, ...(req.senderId && { sender_id: req.senderId }) }),
    });
  } catch (error) {
    const failed = callFailure(error, cast.host, cast.timeoutMs);
    if (neverSent(error)) throw new GatewayError("unreachable", `gateway unreachable: ${failed.message}`, { cause: error });
    // The request may have reached the gateway: never resend it blindly.
    throw new GatewayError("unknown", `gateway did not answer: ${failed.message}; delivery unknown`, { cause: error });
  }
  const fromCache = res.headers.get("x-idempotent-replay") === "true";
  try {
    return { ...readAnswer(res.status, res._data ?? "", res.headers.get("retry-after")), ...(fromCache && { replayed: true }) };
  } catch (error) {
    throw fromCache ? replayed(error, res.status) : error;
  }
}
