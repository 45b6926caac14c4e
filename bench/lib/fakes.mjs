// Minimal fakes of HighLevel and Cast.ph on node:http, in the benchmark process.
// They are plain node:http (not h3) so that they cost as little CPU as possible:
// on 2 cores every cycle they spend is taken from bridge or from the load generator.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";

/** HighLevel's documented answers (../shared/fixtures/highlevel, copied to test/fixtures), read once. */
const highlevel = (name) => JSON.parse(readFileSync(new URL(`../../test/fixtures/highlevel/${name}.json`, import.meta.url), "utf8"));
const UPSERT_200 = highlevel("contacts-upsert-200");
const INBOUND_200 = highlevel("inbound-message-200");

function listen(handler) {
  const server = createServer((req, res) => {
    const arrived = performance.now();
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => handler(req, res, Buffer.concat(chunks).toString("utf8"), arrived));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

function json(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * HighLevel: authorization code "code-<locationId>" exchanges for that location's
 * token; status PUTs answer 200 and are counted (first time per message id). Replies:
 * a contact upsert finds or makes the contact of a location's phone
 * (contacts-upsert-200.json), an inbound message is taken (inbound-message-200.json)
 * and counted by its `altId`, each time it comes: a reply posted twice shows.
 */
export async function startFakeCrm() {
  let serial = 0;
  const reports = new Map(); // messageId -> { status, at }
  let puts = 0;
  const contacts = new Map(); // locationId + phone -> contact id
  const inbound = new Map(); // altId -> { posts, at }: how often it came, when it first did
  const token = (locationId) => ({
    access_token: `at-${locationId}-${++serial}`,
    refresh_token: `rt-${locationId}-${serial}`,
    expires_in: 86399,
    token_type: "Bearer",
    userType: "Location",
    locationId,
    companyId: "company-bench",
  });
  const server = await listen((req, res, body) => {
    const path = new URL(req.url, "http://x").pathname;
    if (req.method === "POST" && path === "/oauth/token") {
      const form = new URLSearchParams(body);
      const code = form.get("code") ?? "";
      if (form.get("grant_type") === "authorization_code" && code.startsWith("code-")) return json(res, 200, token(code.slice(5)));
      const refresh = /^rt-(.+)-\d+$/.exec(form.get("refresh_token") ?? "");
      if (refresh) return json(res, 200, token(refresh[1]));
      return json(res, 400, { error: "invalid_grant" });
    }
    if (req.method === "POST" && path === "/contacts/upsert") return json(res, 200, upsertAnswer(contacts, safeParse(body) ?? {}));
    if (req.method === "POST" && path === "/conversations/messages/inbound") {
      const message = safeParse(body) ?? {};
      const seen = inbound.get(message.altId);
      if (seen) seen.posts++;
      else inbound.set(message.altId, { posts: 1, at: performance.now() });
      return json(res, 200, { ...INBOUND_200, conversationId: `conv-${message.contactId}`, messageId: `msg-${++serial}`, message: message.message, contactId: message.contactId });
    }
    const status = /^\/conversations\/messages\/([^/]+)\/status$/.exec(path);
    if (req.method === "PUT" && status) {
      puts++;
      const id = decodeURIComponent(status[1]);
      if (!reports.has(id)) reports.set(id, { status: safeParse(body)?.status, at: performance.now() });
      return json(res, 200, { success: true });
    }
    json(res, 404, { message: "not found" });
  });
  return {
    ...server,
    reports,
    inbound,
    get puts() {
      return puts;
    },
    countStatus(status) {
      let n = 0;
      for (const r of reports.values()) if (r.status === status) n++;
      return n;
    },
  };
}

/**
 * Cast.ph, answering in the shapes of Cast's documented examples (../shared/fixtures/cast,
 * docs/services/cast-api.md): the send's `message_id`; the status call's `status`, `sent_at` and, once
 * the carrier's receipt exists, `dlr_status`, with `delivered_at` for a DELIVRD one only
 * (Cast: "timestamp of handset confirmation"); the log's entries with Cast's integer row
 * `id`, the send's id in `smpp_message_id`, `status` only `sent`, and `dlr_status` (and
 * `delivered_at`) the same way, newest first, paged by `limit` (at most 500) and
 * `offset`; the account's balance and sender IDs; errors, unknown paths included, as
 * `{success: false, error, error_code}`. test/integration/bench-fakes.test.ts holds
 * these answers to the fixtures.
 *
 * With `limit`, sends meet Cast's per-account limit as a token bucket (refill
 * `ratePerSec`, capacity `burst`, full from the start) and a 429 with Retry-After: 1
 * when it is empty; `perAddress`: the same bucket covers every call (the four-keys
 * phase). `address`: {ratePerSec, burst}, a bucket of its own for every call from this
 * address (Cast's 30 requests/s, burst 50), beside the sends' one. A send is answered
 * after `latencyMs`. `receiptOf(text)`: {delayMs, dlr} of each accepted message, when
 * its carrier receipt comes and what it says; by default DELIVRD at once. Every
 * accepted SMS is timed by the text it carries, so the benchmark can tie it to the
 * webhook that asked for it.
 *
 * Several servers (the servers phase): `perSource` {ratePerSec, burst}, a bucket of its own
 * for each source address, covering every call from it (Cast's 30 requests/s, burst 50);
 * `perKey` {ratePerSec, burst}, a bucket of its own for each API key's sends (Cast's 10
 * messages/s per account). Their 429s are counted apart in `stats.refusedBy`, and each
 * accepted send records its key and source address.
 */
export async function startFakeGateway({ limit = false, ratePerSec = 30, burst = 50, latencyMs = 0, perAddress = false, address, receiptOf, perSource, perKey } = {}) {
  const sendBucket = bucket(ratePerSec, burst);
  const addressBucket = address ? bucket(address.ratePerSec, address.burst) : undefined;
  const sourceBuckets = new Map(); // source address -> its bucket
  const keyBuckets = new Map(); // API key -> its bucket of sends
  const refusedBy = { source: 0, key: 0 };
  const refuse = (res, reason) => {
    refusedBy[reason]++;
    stats.rateLimited++;
    return json(res, 429, castError("RATE_LIMIT_EXCEEDED", "rate limit exceeded"), { "retry-after": "1" });
  };
  const own = (buckets, name, limits) => buckets.get(name) ?? buckets.set(name, bucket(limits.ratePerSec, limits.burst)).get(name);
  let serial = 0;
  let row = 42_412;
  const accepted = []; // { at, message }
  const acceptedAt = new Map(); // message text -> time the request arrived
  const receiptAt = new Map(); // message text -> { at, dlr }: when its carrier receipt came, and what it said
  const rateLimitedAt = [];
  // receiptReads: status calls and log reads together.
  const stats = { calls: 0, rateLimited: 0, duplicates: 0, replays: 0, receiptReads: 0, statusCalls: 0, logReads: 0 };
  // Cast's idempotency cache: a repeated X-Idempotency-Key gets the first answer again.
  const replies = new Map();
  const sent = []; // each accepted message as the account's log keeps it, oldest first
  const byId = new Map(); // message_id -> the same
  const readsAt = []; // when each status or log read arrived

  function receipt(m, now) {
    const r = receiptAt.get(m.message);
    if (!r || r.at > now) return {};
    return r.dlr === "DELIVRD" ? { dlr_status: r.dlr, delivered_at: iso(r.at) } : { dlr_status: r.dlr };
  }

  // `arrived`: the request's arrival, not the end of its body, is "the gateway received the call".
  const server = await listen((req, res, body, arrived) => {
    const now = performance.now();
    const source = req.socket.remoteAddress;
    if (perSource && !own(sourceBuckets, source, perSource).take(now)) return refuse(res, "source");
    if ((addressBucket && !addressBucket.take(now)) || (perAddress && req.method === "GET" && limit && !sendBucket.take(now))) {
      stats.rateLimited++;
      return json(res, 429, castError("RATE_LIMIT_EXCEEDED", "rate limit exceeded"), { "retry-after": "1" });
    }
    // `bridge serve` asks for the balance of each key at start-up, `doctor` for the sender IDs too.
    if (req.method === "GET" && req.url === "/api/v1/account/balance") return json(res, 200, { success: true, credits: 4750, currency: "PHP" });
    if (req.method === "GET" && req.url === "/api/v1/account/sender-ids") {
      return json(res, 200, { success: true, sender_ids: [{ sender_id: "BENCH", label: "Benchmark", channel: "sms" }] });
    }
    // Read before the sends of each key, every few minutes: nobody unsubscribed in a benchmark.
    if (req.method === "GET" && req.url === "/api/v1/account/unsubscribed") return json(res, 200, { success: true, data: [] });
    if (req.method === "GET") readsAt.push(now);
    if (req.method === "GET" && req.url.startsWith("/api/v1/sms/status/")) {
      stats.receiptReads++;
      stats.statusCalls++;
      const m = byId.get(decodeURIComponent(req.url.slice("/api/v1/sms/status/".length)));
      // Cast: "Message ID not found or belongs to a different account".
      if (!m || m.key !== req.headers["x-api-key"]) return json(res, 404, castError("NOT_FOUND", "message not found"));
      const r = receipt(m, now);
      const status = STATUS_OF_DLR[r.dlr_status] ?? "sent";
      return json(res, 200, { success: true, message_id: m.id, status, sent_at: iso(m.at), ...r });
    }
    if (req.method === "GET" && req.url.startsWith("/api/v1/sms/logs")) {
      stats.receiptReads++;
      stats.logReads++;
      const q = new URL(req.url, "http://x").searchParams;
      const size = Math.min(500, Number(q.get("limit") ?? 50) || 50);
      const offset = Number(q.get("offset") ?? 0) || 0;
      const mine = [];
      for (let i = sent.length - 1; i >= 0; i--) if (sent[i].key === req.headers["x-api-key"]) mine.push(sent[i]);
      const logs = mine.slice(offset, offset + size).map((m) => ({
        id: m.row,
        message_type: "sms",
        sender_id: "BENCH",
        destination: "+639171234567",
        message: m.message,
        smpp_message_id: m.id,
        status: "sent",
        parts: 1,
        created_at: iso(m.at),
        ...receipt(m, now),
      }));
      return json(res, 200, { success: true, count: mine.length, logs });
    }
    if (req.method !== "POST" || req.url !== "/api/v1/sms/send") {
      // Cast's 405 METHOD_NOT_ALLOWED is the documented "wrong HTTP method".
      if (ENDPOINT.test(new URL(req.url, "http://x").pathname)) return json(res, 405, castError("METHOD_NOT_ALLOWED", "method not allowed"));
      return json(res, 404, castError("NOT_FOUND", "not found"));
    }
    stats.calls++;
    if (perKey && !own(keyBuckets, req.headers["x-api-key"], perKey).take(now)) return refuse(res, "key");
    if (limit && !sendBucket.take(performance.now())) {
      stats.rateLimited++;
      rateLimitedAt.push(arrived);
      return json(res, 429, castError("RATE_LIMIT_EXCEEDED", "rate limit exceeded"), { "retry-after": "1" });
    }
    const key = req.headers["x-idempotency-key"];
    if (key && replies.has(key)) {
      stats.replays++;
      return json(res, 200, replies.get(key), { "x-idempotent-replay": "true" });
    }
    const message = safeParse(body)?.message ?? "";
    if (acceptedAt.has(message)) stats.duplicates++;
    else acceptedAt.set(message, arrived);
    const at = performance.now();
    accepted.push({ at, message, key: req.headers["x-api-key"], source });
    const answer = { success: true, message_id: `CAST${(++serial).toString(16).padStart(12, "0")}`, parts: 1 };
    const m = { id: answer.message_id, row: ++row, key: req.headers["x-api-key"], message, at };
    sent.push(m);
    byId.set(m.id, m);
    if (!receiptAt.has(message)) {
      const r = receiptOf?.(message) ?? { delayMs: 0, dlr: "DELIVRD" };
      receiptAt.set(message, { at: at + r.delayMs, dlr: r.dlr });
    }
    if (key) replies.set(key, answer);
    if (latencyMs > 0) setTimeout(() => json(res, 200, answer), latencyMs);
    else json(res, 200, answer);
  });
  return { ...server, accepted, acceptedAt, receiptAt, rateLimitedAt, readsAt, stats, refusedBy };
}

/** The contact of a location's phone, made by the first upsert, in HighLevel's answer. */
function upsertAnswer(contacts, { locationId, phone }) {
  const key = `${locationId} ${phone}`;
  const known = contacts.get(key);
  const id = known ?? `contact-${contacts.size + 1}`;
  if (!known) contacts.set(key, id);
  return { ...UPSERT_200, new: !known, contact: { ...UPSERT_200.contact, id, locationId, phone, dnd: false, dndSettings: { SMS: { status: "inactive", message: "", code: "" } } } };
}

/** The paths this fake has an endpoint for, whatever the method. */
const ENDPOINT = /^\/api\/v1\/(sms\/(send|logs|status\/[^/]+)|account\/(balance|sender-ids|unsubscribed))$/;

/** The status call's `status` for each carrier code (docs/services/cast-api.md); none yet is `sent`. */
const STATUS_OF_DLR = { DELIVRD: "delivered", ACCEPTD: "pending", UNDELIV: "undelivered", REJECTD: "undelivered", EXPIRED: "undelivered" };

/** A token bucket, full from the start. */
function bucket(perSec, size) {
  let tokens = size;
  let last = performance.now();
  return {
    take(now) {
      tokens = Math.min(size, tokens + ((now - last) * perSec) / 1000);
      last = now;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
  };
}

/** Cast's error envelope. */
function castError(code, error) {
  return { success: false, error, error_code: code };
}

/**
 * Cast's times (ISO 8601 UTC to the second) of a performance.now() instant. Rounded
 * down, as a clock that shows whole seconds is.
 */
function iso(at) {
  return new Date(Math.floor((performance.timeOrigin + at) / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
