import type { H3Event } from "h3";
import { fixture } from "./fixtures.ts";
import { jsonResponse, startFake, type Handler, type Recorded } from "./http.ts";

export const SEND = "POST /api/v1/sms/send";
export const STATUS = "GET /api/v1/sms/status/:id";
export const BALANCE = "GET /api/v1/account/balance";
export const LOGS = "GET /api/v1/sms/logs";
export const SENDER_IDS = "GET /api/v1/account/sender-ids";
export const UNSUBSCRIBED = "GET /api/v1/account/unsubscribed";
/** Every call to a path (or with a method) Cast has no endpoint for. */
export const UNKNOWN = "ALL /**";

/** One approved sender ID as Cast lists it. */
export type ApprovedSender = { sender_id: string; label: string; channel: "sms" | "sim" };

/** What the carrier has said of a message so far, in the status call's terms: Cast's `status`, the carrier's `dlr_status`. */
export type Receipt = { status: string; dlr_status?: string; error_message?: string };

/**
 * Cast's documented answers (../shared/fixtures/cast, docs/services/cast-api.md): every answer of this
 * fake takes its field names, their order and the fixed values from these, and
 * test/integration/cast-contract.test.ts holds each answer to them field for field.
 */
export const CAST = {
  send: fixture("cast", "send-200.json"),
  sandbox: fixture("cast", "send-sandbox-200.json"),
  status: fixture("cast", "status-200.json"),
  /** logs[0]: an entry whose receipt has not come (no dlr_status, no delivered_at); logs[1]: a delivered one. */
  logs: fixture<{ logs: [Record<string, unknown>, Record<string, unknown>] } & Record<string, unknown>>("cast", "logs-200.json"),
  balance: fixture("cast", "balance-200.json"),
  senderIds: fixture("cast", "sender-ids-200.json"),
  /** data[0]: one number that unsubscribed from one sender ID. */
  unsubscribed: fixture<{ data: [Record<string, unknown>] } & Record<string, unknown>>("cast", "unsubscribed-200.json"),
  error: fixture("cast", "error-402.json"),
};

/** Cast's error envelope `{success: false, error, error_code}` (docs/services/cast-api.md "Basics"). */
export function castError(status: number, errorCode: string, error: string, headers: Record<string, string> = {}): Response {
  return jsonResponse(like(CAST.error, { error, error_code: errorCode }), status, headers);
}

/**
 * A fake Cast.ph v1: accepts every SMS unless a test swaps the handler, and honours
 * `X-Idempotency-Key` as Cast does: the first request with a key is handled and its
 * answer kept; a repeat (even while the first is still being answered) gets that
 * answer again with `X-Idempotent-Replay: true` and sends nothing, whatever that answer
 * was (docs/services/cast-api.md: Cast keeps "the original response" for 24 hours), a 429 or a 5xx
 * included; a refusal of the key or the caller's IP (`checkKey`) and Cast's own rate
 * limits come before the cache and are never kept. A key starting `cast_test_` is a
 * sandbox key: answered `sandbox: true` with a `SANDBOX_` id, and no carrier receipt.
 * Each accepted message is a row of the account's log (`GET /api/v1/sms/logs`).
 */
export async function startFakeGateway() {
  let serial = 0;
  const accept = () => jsonResponse(like(CAST.send, { message_id: `cast-${++serial}`, parts: 1 }));
  let handler: Handler = accept;
  // Cast checks the key and the caller's IP before its idempotency cache: a refusal there is never kept.
  let keyCheck: ((req: Recorded) => Response | undefined | Promise<Response | undefined>) | undefined;
  // Cast keeps "the original response", whatever it was; a test can make the fake forget 429 and 5xx.
  let keepFailures = true;
  const answers = new Map<string, Promise<Kept | undefined>>();
  /** The requests that reached the handler: replays are not among them. */
  const handled: Recorded[] = [];
  /** Each accepted message by its message_id, in the order sent. */
  const accepted = new Map<string, Sent>();
  // Cast's own row numbers: an integer, not the send's message id.
  let row = 42_412;
  // By default the carrier delivers at once; a test can make receipts late, or refusals.
  let receiptOf: (message: string, sinceSendMs: number) => Receipt = () => ({ status: "delivered", dlr_status: "DELIVRD" });
  // Cast's log serves at most 500 entries a page, or fewer when a test caps it; its clock
  // (the times it writes) is ours plus `clockMs` (negative: behind).
  const castLog = { pageCap: 500, clockMs: 0 };
  const castTime = (ms: number) => iso(ms + castLog.clockMs);

  // Cast's limits, when a test sets them: a token bucket per API key for sends, and one per
  // source address (the request's remote address, as Cast sees it) for every request.
  // `rateLimited` counts the 429s; `byAddress` and `byKey` say which bucket refused.
  const limit = { perSecond: 0, burst: 0, requestsPerSecond: 0, requestBurst: 0, rateLimited: 0, byAddress: 0, byKey: 0 };
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
  function rateLimited(reason: "byAddress" | "byKey"): Response {
    limit.rateLimited++;
    limit[reason]++;
    return castError(429, "RATE_LIMIT_EXCEEDED", "rate limit exceeded", { "retry-after": "1" });
  }
  /** `handler` behind the per-address limit. */
  const limited =
    (handler: Handler): Handler =>
    (req, event) =>
      overAddress(req) ? rateLimited("byAddress") : handler(req, event);
  const overAddress = (req: Recorded) => over(`address ${req.remoteAddress}`, limit.requestsPerSecond, limit.requestBurst);

  async function handle(req: Recorded, event: H3Event): Promise<Response> {
    if (overAddress(req)) return rateLimited("byAddress");
    if (over(`key ${req.headers["x-api-key"] ?? ""}`, limit.perSecond, limit.burst)) return rateLimited("byKey");
    const refused = await keyCheck?.(req);
    if (refused) return refused;
    const scope = `${req.headers["x-api-key"] ?? ""} ${req.headers["x-idempotency-key"] ?? ""}`;
    const kept = req.headers["x-idempotency-key"] ? answers.get(scope) : undefined;
    const replay = kept && (await kept);
    if (replay) return new Response(replay.body, { status: replay.status, headers: { ...replay.headers, "x-idempotent-replay": "true" } });
    handled.push(req);
    const sandbox = (req.headers["x-api-key"] ?? "").startsWith("cast_test_");
    const answering = Promise.resolve(sandbox ? sandboxAnswer() : handler(req, event))
      .then(toResponse)
      .then(async (res) => {
        const body = res.ok ? ((await res.clone().json().catch(() => undefined)) as { message_id?: unknown; parts?: unknown } | undefined) : undefined;
        if (typeof body?.message_id === "string") record(body.message_id, req, typeof body.parts === "number" ? body.parts : 1, sandbox);
        return res;
      });
    if (req.headers["x-idempotency-key"]) answers.set(scope, answering.then((res) => keep(res, keepFailures), () => undefined));
    return (await answering).clone();
  }

  function sandboxAnswer(): Response {
    return jsonResponse(like(CAST.sandbox, { message_id: `SANDBOX_${(++serial).toString(16).padStart(16, "0")}`, parts: 1 }));
  }

  function record(messageId: string, req: Recorded, parts: number, sandbox: boolean): void {
    const body = JSON.parse(req.body) as { to?: string; message?: string; sender_id?: string };
    const to = body.to ?? "";
    accepted.set(messageId, {
      id: ++row,
      messageId,
      apiKey: req.headers["x-api-key"],
      destination: to.startsWith("09") ? `+63${to.slice(1)}` : to,
      message: body.message ?? "",
      senderId: body.sender_id ?? approvedSenders[0]?.sender_id ?? "",
      parts,
      sentAt: Date.now(),
      sandbox,
    });
  }

  /**
   * What the carrier has said of `sent` by now. Cast's documentation ("Optional fields (only
   * present when applicable)"): `delivered_at` is the "timestamp of handset confirmation",
   * so it comes with DELIVRD only; `error_message` is the "SMPP error detail if status is
   * failed", so it comes with `failed` only.
   */
  function carrier(sent: Sent): { status: string; dlr?: string; deliveredAt?: number; errorMessage?: string } {
    if (sent.sandbox) return { status: "sent" };
    const said = receiptOf(sent.message, Date.now() - sent.sentAt);
    const dlr = said.dlr_status ?? DLR_OF[said.status];
    if (dlr && sent.dlr !== dlr) Object.assign(sent, { dlr, dlrAt: Date.now() });
    return {
      status: said.status,
      dlr,
      deliveredAt: dlr === "DELIVRD" ? sent.dlrAt : undefined,
      errorMessage: said.status === "failed" ? said.error_message : undefined,
    };
  }

  function status(req: Recorded): Response {
    const id = decodeURIComponent(req.path.split("/").at(-1) ?? "");
    const sent = accepted.get(id);
    if (!sent || sent.apiKey !== req.headers["x-api-key"]) return castError(404, "NOT_FOUND", "message not found");
    const now = carrier(sent);
    return jsonResponse({
      ...like(CAST.status, {
        message_id: id,
        status: now.status,
        sent_at: castTime(sent.sentAt),
        dlr_status: now.dlr,
        delivered_at: now.deliveredAt === undefined ? undefined : castTime(now.deliveredAt),
      }),
      // Documented ("error_message"?) though the example has none.
      ...(now.errorMessage && { error_message: now.errorMessage }),
    });
  }

  /** The account's messages, newest first, as Cast's log lists them (docs/services/cast-api.md: read an entry carefully). */
  function logs(req: Recorded): Response {
    const q = req.query;
    const limit = Math.min(castLog.pageCap, Math.max(1, Number(q.get("limit") ?? 50) || 50));
    const offset = Math.max(0, Number(q.get("offset") ?? 0) || 0);
    const from = q.get("from") ? Date.parse(`${q.get("from")}T00:00:00Z`) : -Infinity;
    const to = q.get("to") ? Date.parse(`${q.get("to")}T00:00:00Z`) + 86_400_000 : Infinity;
    const search = q.get("search") ?? "";
    const entries = [...accepted.values()]
      .filter((sent) => sent.apiKey === req.headers["x-api-key"] && sent.sentAt >= from && sent.sentAt < to)
      .reverse()
      .map(logEntry)
      .filter((entry) => !q.get("status") || entry.status === q.get("status"))
      .filter((entry) => !search || [entry.destination, entry.message, entry.smpp_message_id, entry.sender_id].some((v) => String(v).includes(search)));
    // count: the entries on this page, which both readings of Cast's docs allow (its example: count 1, one entry).
    const listed = entries.slice(offset, offset + limit);
    return jsonResponse(like(CAST.logs, { count: listed.length, logs: listed }));
  }

  function logEntry(sent: Sent): Record<string, unknown> {
    const now = carrier(sent);
    return like(CAST.logs.logs[1], {
      id: sent.id,
      sender_id: sent.senderId,
      destination: sent.destination,
      message: sent.message,
      smpp_message_id: sent.messageId,
      // The submission only: the carrier's word is dlr_status, absent until it came.
      status: now.status === "failed" ? "failed" : "sent",
      parts: sent.parts,
      created_at: castTime(sent.sentAt),
      dlr_status: now.dlr,
      delivered_at: now.deliveredAt === undefined ? undefined : castTime(now.deliveredAt),
    });
  }

  // The account's approved sender IDs, the same for every key unless a test swaps the route.
  let approvedSenders: ApprovedSender[] = [{ sender_id: "BRIDGE", label: "Bridge", channel: "sms" }];
  // The numbers that unsubscribed through Cast's links, the same for every key: none unless a test sets them.
  let unsubscribed: { phone: string; sender_id: string }[] = [];

  const own: Record<string, Handler> = {
    [STATUS]: status,
    [LOGS]: logs,
    [BALANCE]: () => jsonResponse(like(CAST.balance, { credits: 1000 })),
    [SENDER_IDS]: () => jsonResponse(like(CAST.senderIds, { sender_ids: approvedSenders })),
    [UNSUBSCRIBED]: () => jsonResponse(like(CAST.unsubscribed, { data: unsubscribed.map((u) => like(CAST.unsubscribed.data[0], u)) })),
    // Every Cast answer is its envelope, errors too: 405 METHOD_NOT_ALLOWED is the documented
    // "wrong HTTP method"; for a path Cast has no endpoint for, its 404 code, NOT_FOUND.
    [UNKNOWN]: (req) =>
      ENDPOINT.test(req.path) ? castError(405, "METHOD_NOT_ALLOWED", "method not allowed") : castError(404, "NOT_FOUND", "not found"),
  };
  const fake = await startFake({ [SEND]: handle, ...Object.fromEntries(Object.entries(own).map(([route, h]) => [route, limited(h)])) });
  return {
    ...fake,
    /** How the fake answers `route` by itself, for a test's handler to fall back on. */
    own(route: string): Handler {
      const h = own[route];
      if (!h) throw new Error(`fake Cast has no own answer for ${route}`);
      return h;
    },
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
    /** Cast's log pages hold at most `pageCap` entries (500 by default), whatever limit is asked. */
    capLogPages(pageCap: number) {
      castLog.pageCap = pageCap;
    },
    /** Cast's clock runs `offsetMs` from ours (negative: behind): the times its log and status calls write. */
    clockOffset(offsetMs: number) {
      castLog.clockMs = offsetMs;
    },
    /** Sets the approved sender IDs the sender-ids endpoint lists. */
    senderIds(list: ApprovedSender[]) {
      approvedSenders = list;
    },
    /** Sets the numbers on the account's unsubscribed list, each with the sender ID it left. */
    unsubscribe(list: { phone: string; sender_id: string }[]) {
      unsubscribed = list;
    },
    /** The reads of the account's unsubscribed list. */
    unsubscribedCalls: () => fake.received(UNSUBSCRIBED),
    /** A refusal of the key or address (401, 403) before the idempotency cache; undefined lets the request through. */
    checkKey(next: ((req: Recorded) => Response | undefined | Promise<Response | undefined>) | undefined) {
      keyCheck = next;
    },
    /**
     * Forget 429 and 5xx answers, so a retry with the same key is handled anew: what a
     * 503 from a proxy in front of Cast's cache, which never reached Cast, looks like.
     */
    forgetFailedAnswers() {
      keepFailures = false;
    },
    /** Enforces Cast's messages a second per API key (burst: the bucket's size); `rateLimited` counts the 429s. */
    limit(perSecond: number, burst = perSecond) {
      Object.assign(limit, { perSecond, burst });
      return limit;
    },
    /** Enforces Cast's requests a second per source address (one bucket each), every kind of call together. */
    limitRequests(requestsPerSecond: number, requestBurst: number) {
      Object.assign(limit, { requestsPerSecond, requestBurst });
      return limit;
    },
  };
}

/** One accepted message, as the fake's log keeps it. */
interface Sent {
  /** Cast's row number. */
  id: number;
  messageId: string;
  apiKey: string | undefined;
  destination: string;
  message: string;
  senderId: string;
  parts: number;
  sentAt: number;
  sandbox: boolean;
  /** The carrier's code so far, and when it came. */
  dlr?: string;
  dlrAt?: number;
}

/** The paths this fake has an endpoint for, whatever the method. */
const ENDPOINT = /^\/api\/v1\/(sms\/(send|logs|status\/[^/]+)|account\/(balance|sender-ids|unsubscribed))$/;

/** The carrier's code a status implies when a test gave only the status. */
const DLR_OF: Record<string, string> = { delivered: "DELIVRD", undelivered: "UNDELIV", pending: "ACCEPTD" };

/**
 * An answer shaped as `template` (a documented example): its fields, in its order, each
 * from `values` or else the example's own; a value given as undefined leaves the field
 * out, as Cast does with one it has no value for. A field the example lacks is a mistake.
 */
function like(template: Record<string, unknown>, values: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(values)) if (!(key in template)) throw new Error(`Cast's documented answer has no field ${key}`);
  const answer: Record<string, unknown> = {};
  for (const [key, example] of Object.entries(template)) {
    const value = key in values ? values[key] : example;
    if (value !== undefined) answer[key] = value;
  }
  return answer;
}

/** Cast's times: ISO 8601 UTC to the second. */
function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
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
