// Minimal fakes of HighLevel and Cast.ph on node:http, in the benchmark process.
// They are plain node:http (not h3) so that they cost as little CPU as possible:
// on 2 cores every cycle they spend is taken from bridge or from the load generator.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";

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
 * token; status PUTs answer 200 and are counted (first time per message id).
 */
export async function startFakeCrm() {
  let serial = 0;
  const reports = new Map(); // messageId -> { status, at }
  let puts = 0;
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
 * Cast.ph. With `limit`, it enforces the documented limit with a token bucket
 * (refill `ratePerSec`, capacity `burst`, full from the start) and answers 429 with
 * Retry-After: 1 when empty, as the real gateway does. Every accepted SMS is timed
 * by the text it carries, so the benchmark can tie it to the webhook that asked for it.
 * A send is answered after `latencyMs`; a delivery status look-up and the log say DELIVRD
 * (the carrier's receipt is there as soon as the message was accepted); both count as
 * `statusCalls`. The rate limit covers sends only.
 */
export async function startFakeGateway({ limit = false, ratePerSec = 30, burst = 50, latencyMs = 0, perAddress = false } = {}) {
  let tokens = burst;
  let last = performance.now();
  let serial = 0;
  const accepted = []; // { at, message }
  const acceptedAt = new Map(); // message text -> time the request arrived
  const rateLimitedAt = [];
  const stats = { calls: 0, rateLimited: 0, duplicates: 0, replays: 0, statusCalls: 0 };
  // Cast's idempotency cache: a repeated X-Idempotency-Key gets the first answer again.
  const replies = new Map();
  const ids = []; // { id, key } in the order sent, for each account's log
  const readsAt = []; // when each status or log read arrived

  function take(now) {
    tokens = Math.min(burst, tokens + ((now - last) * ratePerSec) / 1000);
    last = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }

  // `arrived`: the request's arrival, not the end of its body, is "the gateway received the call".
  const server = await listen((req, res, body, arrived) => {
    // `perAddress`: the limit is Cast's 30 requests/s for every call from this address.
    if (perAddress && req.method === "GET" && limit && !take(performance.now())) {
      stats.rateLimited++;
      return json(res, 429, { success: false, error: "rate limit exceeded" }, { "retry-after": "1" });
    }
    if (req.method === "GET") readsAt.push(performance.now());
    if (req.method === "GET" && req.url.startsWith("/api/v1/sms/status/")) {
      stats.statusCalls++;
      return json(res, 200, { success: true, status: "delivered", dlr_status: "DELIVRD" });
    }
    if (req.method === "GET" && req.url.startsWith("/api/v1/sms/logs")) {
      stats.statusCalls++;
      const mine = ids.filter((sent) => sent.key === req.headers["x-api-key"]);
      const logs = mine.slice(-500).reverse().map(({ id }) => ({ id, status: "delivered", dlr_status: "DELIVRD" }));
      return json(res, 200, { success: true, count: mine.length, logs });
    }
    if (req.method !== "POST" || req.url !== "/api/v1/sms/send") return json(res, 404, { success: false, error: "not found" });
    stats.calls++;
    if (limit && !take(performance.now())) {
      stats.rateLimited++;
      rateLimitedAt.push(arrived);
      return json(res, 429, { success: false, error: "rate limit exceeded" }, { "retry-after": "1" });
    }
    const key = req.headers["x-idempotency-key"];
    if (key && replies.has(key)) {
      stats.replays++;
      return json(res, 200, replies.get(key), { "x-idempotent-replay": "true" });
    }
    const message = safeParse(body)?.message ?? "";
    if (acceptedAt.has(message)) stats.duplicates++;
    else acceptedAt.set(message, arrived);
    accepted.push({ at: performance.now(), message });
    const answer = { success: true, message_id: `cast-${++serial}`, parts: 1 };
    ids.push({ id: answer.message_id, key: req.headers["x-api-key"] });
    if (key) replies.set(key, answer);
    if (latencyMs > 0) setTimeout(() => json(res, 200, answer), latencyMs);
    else json(res, 200, answer);
  });
  return { ...server, accepted, acceptedAt, rateLimitedAt, readsAt, stats };
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
