import type { H3Event } from "h3";
import { jsonResponse, startFake, type Handler, type Recorded } from "./http.ts";

export const SEND = "POST /api/v1/sms/send";
export const STATUS = "GET /api/v1/sms/status/:id";
export const BALANCE = "GET /api/v1/account/balance";
export const LOGS = "GET /api/v1/sms/logs";
export const SENDER_IDS = "GET /api/v1/account/sender-ids";

/** One approved sender ID as Cast lists it. */
export type ApprovedSender = { sender_id: string; label: string; channel: "sms" | "sim" };

/** What the fake's status endpoint says of a message: Cast's `status` and the carrier's `dlr_status`. */
export type Receipt = { status: string; dlr_status?: string; error_message?: string };

/**
 * A fake Cast.ph v1: accepts every SMS unless a test swaps the handler, and honours
 * `X-Idempotency-Key` as Cast does: the first request with a key is handled and its
 * answer kept; a repeat (even while the first is still being answered) gets that
 * answer again with `X-Idempotent-Replay: true` and sends nothing. 429 and 5xx answers
 * are not kept, so a retry after them is handled anew.
 */
export async function startFakeGateway() {
  let serial = 0;
  const accept = () => jsonResponse({ success: true, message_id: `cast-${++serial}`, parts: 1 });
  let handler: Handler = accept;
  // Cast checks the key and the caller's IP before its idempotency cache: a refusal there is never kept.
  let keyCheck: ((req: Recorded) => Response | undefined) | undefined;
  // Cast keeps "the original response", whatever it was; by default the fake forgets 429 and 5xx.
  let keepFailures = false;
  const answers = new Map<string, Promise<Kept | undefined>>();
  /** The requests that reached the handler: replays are not among them. */
  const handled: Recorded[] = [];
  /** Each accepted message by its message_id: its text and when it was sent. */
  const accepted = new Map<string, { message: string; sentAt: number; apiKey: string | undefined }>();
  // By default the carrier delivers at once; a test can make receipts late, or refusals.
  let receiptOf: (message: string, sinceSendMs: number) => Receipt = () => ({ status: "delivered", dlr_status: "DELIVRD" });

  // Cast's limits, when a test sets them: a token bucket per API key for sends, and one
  // for every request from this (the only) address.
  const limit = { perSecond: 0, burst: 0, requestsPerSecond: 0, requestBurst: 0, rateLimited: 0 };
  const buckets = new Map<string, { tokens: number; at: number }>();
  function over(name: string, perSecond: number, burst: number): boolean {
    if (perSecond <= 0) return false;
    const t = performance.now();
    const b = buckets.get(name) ?? { tokens: burst, at: t };
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) * perSecond) / 1000);
    b.at = t;
    buckets.set(name, b);
    if (b.tokens < 1) return true;
    b.tokens -= 1;
    return false;
  }
  function rateLimited(): Response {
    limit.rateLimited++;
    return jsonResponse({ success: false, error: "Rate limit exceeded", error_code: "RATE_LIMIT_EXCEEDED" }, 429, { "retry-after": "1" });
  }
  /** `handler` behind the per-address limit. */
  const limited =
    (handler: Handler): Handler =>
    (req, event) =>
      over("address", limit.requestsPerSecond, limit.requestBurst) ? rateLimited() : handler(req, event);

  async function handle(req: Recorded, event: H3Event): Promise<Response> {
    if (over("address", limit.requestsPerSecond, limit.requestBurst)) return rateLimited();
    if (over(`key ${req.headers["x-api-key"] ?? ""}`, limit.perSecond, limit.burst)) return rateLimited();
    const refused = keyCheck?.(req);
    if (refused) return refused;
    const scope = `${req.headers["x-api-key"] ?? ""} ${req.headers["x-idempotency-key"] ?? ""}`;
    const kept = req.headers["x-idempotency-key"] ? answers.get(scope) : undefined;
    const replay = kept && (await kept);
    if (replay) return new Response(replay.body, { status: replay.status, headers: { ...replay.headers, "x-idempotent-replay": "true" } });
    handled.push(req);
    const answering = Promise.resolve(handler(req, event))
      .then(toResponse)
      .then(async (res) => {
        const body = res.ok ? ((await res.clone().json().catch(() => undefined)) as { message_id?: unknown } | undefined) : undefined;
        if (typeof body?.message_id === "string") {
          const { message } = JSON.parse(req.body) as { message: string };
          accepted.set(body.message_id, { message, sentAt: Date.now(), apiKey: req.headers["x-api-key"] });
        }
        return res;
      });
    if (req.headers["x-idempotency-key"]) answers.set(scope, answering.then((res) => keep(res, keepFailures), () => undefined));
    return (await answering).clone();
  }

  function status(req: Recorded): Response {
    const id = decodeURIComponent(req.path.split("/").at(-1) ?? "");
    const sent = accepted.get(id);
    if (!sent) return jsonResponse({ success: false, error: "Message not found", error_code: "NOT_FOUND" }, 404);
    return jsonResponse({ success: true, message_id: id, ...receiptOf(sent.message, Date.now() - sent.sentAt) });
  }

  /** The account's newest messages first, with what the carrier said of each so far. */
  function logs(req: Recorded): Response {
    const limit = Math.min(500, Number(req.query.get("limit") ?? 50));
    const offset = Number(req.query.get("offset") ?? 0);
    const apiKey = req.headers["x-api-key"];
    const mine = [...accepted].filter(([, sent]) => sent.apiKey === apiKey).reverse();
    const page = mine.slice(offset, offset + limit).map(([id, sent]) => ({ id, message: sent.message, ...receiptOf(sent.message, Date.now() - sent.sentAt) }));
    return jsonResponse({ success: true, count: mine.length, logs: page });
  }

  // The account's approved sender IDs, the same for every key unless a test swaps the route.
  let approvedSenders: ApprovedSender[] = [{ sender_id: "BRIDGE", label: "Bridge", channel: "sms" }];

  const fake = await startFake({
    [SEND]: handle,
    [STATUS]: limited(status),
    [LOGS]: limited(logs),
    [BALANCE]: limited(() => jsonResponse({ success: true, credits: 1000, currency: "PHP" })),
    [SENDER_IDS]: limited(() => jsonResponse({ success: true, sender_ids: approvedSenders })),
  });
  return {
    ...fake,
    /** Replace how a route answers; for the send route, behind the idempotency cache. */
    on(route: string, next: Handler) {
      if (route === SEND) handler = next;
      else fake.on(route, limited(next));
    },
    /** Every call to the send endpoint, replays included. */
    calls: () => fake.received(SEND),
    /** The SMS requests the gateway handled (not answered from its cache), parsed, with their API key. */
    sent() {
      return handled.map((r) => ({
        apiKey: r.headers["x-api-key"],
        ...(JSON.parse(r.body) as { to: string; message: string; sender_id?: string }),
      }));
    },
    /** The idempotency keys of the calls, in order. */
    keys: () => fake.received(SEND).map((r) => r.headers["x-idempotency-key"]),
    accept,
    /** What the carrier says of each message (by its text, and the ms since it was sent). */
    receipts(next: (message: string, sinceSendMs: number) => Receipt) {
      receiptOf = next;
    },
    /** The delivery status look-ups of single messages, in order. */
    statusCalls: () => fake.received("GET /api/v1/sms/status/"),
    /** The reads of the account's log. */
    logCalls: () => fake.received(LOGS),
    /** Sets the approved sender IDs the sender-ids endpoint lists. */
    senderIds(list: ApprovedSender[]) {
      approvedSenders = list;
    },
    /** A refusal of the key or address (401, 403) before the idempotency cache; undefined lets the request through. */
    checkKey(next: ((req: Recorded) => Response | undefined) | undefined) {
      keyCheck = next;
    },
    /** Keep 429 and 5xx answers under their idempotency key too, and replay them, as Cast may. */
    keepFailedAnswers() {
      keepFailures = true;
    },
    /** Enforces Cast's messages a second per API key (burst: the bucket's size); `rateLimited` counts the 429s. */
    limit(perSecond: number, burst = perSecond) {
      Object.assign(limit, { perSecond, burst });
      return limit;
    },
    /** Enforces Cast's requests a second per address, every kind of call together. */
    limitRequests(requestsPerSecond: number, requestBurst: number) {
      Object.assign(limit, { requestsPerSecond, requestBurst });
      return limit;
    },
  };
}

interface Kept {
  status: number;
  body: string;
  headers: Record<string, string>;
}

async function keep(res: Response, failures: boolean): Promise<Kept | undefined> {
  if (!failures && (res.status === 429 || res.status >= 500)) return undefined;
  return { status: res.status, body: await res.clone().text(), headers: Object.fromEntries(res.headers.entries()) };
}

function toResponse(value: unknown): Response {
  return value instanceof Response ? value : jsonResponse(value);
}

export type FakeGateway = Awaited<ReturnType<typeof startFakeGateway>>;
