import pRetry from "p-retry";
import { GatewayError, errorMessage } from "../errors.ts";
import { neverSent, retryAfterMs, sleep, timedOut } from "../retry.ts";
import { $http } from "./transport.ts";

/** Cast.ph, the Philippine SMS gateway (CONTRACT.md section 5). */
export interface GatewayOptions {
  apiUrl: string;
  timeoutMs?: number;
  /** Retries of a 429 or of a connection that was never made. */
  retries?: number;
  /** First back-off when the gateway gives no Retry-After. */
  retryDelayMs?: number;
}

export interface SendRequest {
  apiKey: string;
  /** Local form, 09XXXXXXXXX. */
  to: string;
  message: string;
  /** "" lets the gateway use the account's default sender. */
  senderId: string;
  /** X-Idempotency-Key: the same for every attempt at one message, so Cast sends it once. */
  idempotencyKey: string;
}

export interface SendResult {
  messageId: string;
  parts: number;
}

/** Cast's word on one message (`GET /api/v1/sms/status/{id}`). */
export interface DeliveryStatus {
  /** sent, pending (carrier accepted), delivered, undelivered, failed. */
  status: string;
  /** The carrier's code: DELIVRD, REJECTD, UNDELIV, EXPIRED, …; "" when none yet. */
  dlrStatus: string;
  errorMessage: string;
}

export type SmsGateway = ReturnType<typeof createCastClient>;

/** Cast.ph's own limit on one message's text. */
export const MAX_MESSAGE_LENGTH = 10_000;

export function createCastClient(options: GatewayOptions) {
  const timeout = options.timeoutMs ?? 30_000;

  /** One attempt. Throws GatewayError; "rate_limited"/"unreachable" are the retryable ones. */
  async function attempt(req: SendRequest): Promise<SendResult> {
    let res;
    try {
      res = await $http.raw<string, "text">("/api/v1/sms/send", {
        baseURL: options.apiUrl,
        method: "POST",
        headers: {
          "X-API-Key": req.apiKey,
          "X-Idempotency-Key": req.idempotencyKey,
          "Content-Type": "application/json",
          Accept: "application/json",
        },
        body: JSON.stringify({ to: req.to, message: req.message, ...(req.senderId && { sender_id: req.senderId }) }),
        timeout,
        retry: 0,
        ignoreResponseError: true,
        responseType: "text",
      });
    } catch (error) {
      if (neverSent(error)) throw new GatewayError("unreachable", `gateway unreachable: ${errorMessage(error)}`, { cause: error });
      // The request may have reached the gateway: never resend it blindly.
      const what = timedOut(error) ? `no answer within ${timeout / 1000} s` : errorMessage(error);
      throw new GatewayError("unknown", `gateway did not answer (${what}); delivery unknown`, { cause: error });
    }
    return readAnswer(res.status, res._data ?? "", res.headers.get("retry-after"));
  }

  return {
    /** The account's credits (`GET /api/v1/account/balance`): also how a held key is probed. Throws GatewayError. */
    async balance(apiKey: string): Promise<number> {
      let res;
      try {
        res = await $http.raw<string, "text">("/api/v1/account/balance", {
          baseURL: options.apiUrl,
          method: "GET",
          headers: { "X-API-Key": apiKey, Accept: "application/json" },
          timeout,
          retry: 0,
          ignoreResponseError: true,
          responseType: "text",
        });
      } catch (error) {
        throw new GatewayError(neverSent(error) ? "unreachable" : "unknown", `gateway balance call failed: ${errorMessage(error)}`, { cause: error });
      }
      const text = res._data ?? "";
      const body = parseBody(text) as (Body & { credits?: unknown }) | undefined;
      if (res.status !== 200 || typeof body?.credits !== "number") {
        throw new GatewayError("rejected", `gateway balance call answered ${res.status}${detail(body, text)}`, { httpStatus: res.status });
      }
      return body.credits;
    },

    /** A sent message's delivery status; throws GatewayError (a 404 while Cast has no record of it yet, too). */
    async status(apiKey: string, messageId: string): Promise<DeliveryStatus> {
      let res;
      try {
        res = await $http.raw<string, "text">(`/api/v1/sms/status/${encodeURIComponent(messageId)}`, {
          baseURL: options.apiUrl,
          method: "GET",
          headers: { "X-API-Key": apiKey, Accept: "application/json" },
          timeout,
          retry: 0,
          ignoreResponseError: true,
          responseType: "text",
        });
      } catch (error) {
        throw new GatewayError(neverSent(error) ? "unreachable" : "unknown", `gateway status call failed: ${errorMessage(error)}`, { cause: error });
      }
      const text = res._data ?? "";
      if (res.status === 429) throw new RateLimited(retryAfterMs(res.headers.get("retry-after"), Date.now()));
      const body = parseBody(text) as (Body & { status?: unknown; dlr_status?: unknown; error_message?: unknown }) | undefined;
      if (res.status !== 200 || typeof body?.status !== "string") {
        throw new GatewayError("rejected", `gateway status call answered ${res.status}${detail(body, text)}`, { httpStatus: res.status });
      }
      return {
        status: body.status,
        dlrStatus: typeof body.dlr_status === "string" ? body.dlr_status : "",
        errorMessage: typeof body.error_message === "string" ? body.error_message : "",
      };
    },

    /** Sends one SMS, retrying only what provably did not go out. */
    async send(req: SendRequest): Promise<SendResult> {
      let attempts = 0;
      try {
        return await pRetry(() => attempt(req), {
          retries: options.retries ?? 4,
          minTimeout: options.retryDelayMs ?? 1000,
          shouldRetry: ({ error }) =>
            error instanceof GatewayError && (error.failure === "rate_limited" || error.failure === "unreachable"),
          onFailedAttempt: async ({ error, attemptNumber, retriesLeft, retryDelay: backoff }) => {
            attempts = attemptNumber;
            // Called before the last try's error is thrown too: wait only when a try follows.
            // p-retry then waits `backoff` itself, so the two make up Retry-After.
            if (error instanceof RateLimited && error.waitMs && retriesLeft > 0) await sleep(Math.max(0, error.waitMs - backoff));
          },
        });
      } catch (error) {
        // Retried and still failing: say so in the status the CRM shows.
        if (attempts < 2 || !(error instanceof GatewayError)) throw error;
        throw new GatewayError(error.failure, `${error.message} (${attempts} attempts)`, { httpStatus: error.httpStatus, cause: error });
      }
    },
  };
}

/** A 429 that says how long to wait. */
export class RateLimited extends GatewayError {
  readonly waitMs: number | undefined;
  constructor(waitMs: number | undefined) {
    super("rate_limited", "gateway rate limit: still answering 429 after retries", { httpStatus: 429 });
    this.waitMs = waitMs;
  }
}

/** Turns the gateway's answer into a result or a classified GatewayError. */
function readAnswer(status: number, text: string, retryAfter: string | null): SendResult {
  if (status === 429) throw new RateLimited(retryAfterMs(retryAfter, Date.now()));
  const body = parseBody(text);
  if (status >= 500) {
    throw new GatewayError("unknown", `gateway answered ${status}${detail(body, text)}; delivery unknown`, { httpStatus: status });
  }
  // Any 2xx may mean the SMS went (Cast.ph answers 200, but a 201/202 is no refusal):
  // only an explicit success:false or a non-2xx says it did not.
  const ok = status >= 200 && status < 300;
  if (!ok || body?.success === false) {
    throw new GatewayError("rejected", `gateway rejected the message (${status})${detail(body, text)}`, { httpStatus: status });
  }
  if (body?.success !== true || typeof body.message_id !== "string") {
    throw new GatewayError("unknown", `gateway answered ${status} without a message_id; delivery unknown`, { httpStatus: status });
  }
  return { messageId: body.message_id, parts: typeof body.parts === "number" ? body.parts : 1 };
}

interface Body {
  success?: unknown;
  message_id?: unknown;
  parts?: unknown;
  error?: unknown;
}

function parseBody(text: string): Body | undefined {
  try {
    const json: unknown = JSON.parse(text);
    return json && typeof json === "object" ? (json as Body) : undefined;
  } catch {
    return undefined;
  }
}

function detail(body: Body | undefined, text: string): string {
  const said = typeof body?.error === "string" ? body.error : text.slice(0, 200);
  return said ? `: ${said}` : "";
}
