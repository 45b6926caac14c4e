import { startFake } from "./http.ts";

/**
 * The receivers' documented answers to an incoming webhook's POST, quoted from their docs:
 *
 * - Mattermost, "Incoming webhooks" (developers.mattermost.com/integrate/webhooks/incoming/):
 *   "A successful request will get the following response: HTTP/1.1 200 OK,
 *   Content-Type: text/plain … ok". The fake answers every taken alert so.
 * - Slack, "Improving error conditions for Incoming Webhooks" (api.slack.com/changelog/
 *   2016-05-17-changes-to-errors-for-incoming-webhooks): "HTTP 400 Bad Request:
 *   invalid_payload - the data sent in your request cannot be understood as presented";
 *   "HTTP 403 Forbidden: action_prohibited"; "HTTP 404 Not Found: channel_not_found";
 *   "HTTP 410 Gone: channel_is_archived"; "HTTP 500 Server Error: rollup_error", each one of
 *   "the simple strings we'll return to you in the response body"; and "interpret a HTTP
 *   200 response as success and any other response code as a failure of some kind".
 * - Slack's webhook error vocabulary as its error decoders list it (routeforms.com,
 *   "Slack webhook error decoder"): `no_service` (a webhook removed or disabled),
 *   `rate_limited`; the statuses given them here (404, 429) are those decoders', not a
 *   Slack page's. Slack's "Rate limits" (api.slack.com/docs/rate-limits): posting
 *   messages, "1 per second", short bursts allowed.
 * - Discord's "Execute Slack-Compatible Webhook" (`POST /webhooks/{id}/{token}/slack`,
 *   discord.com/developers/docs/resources/webhook) takes the same `{"text"}` body; its answer
 *   body was not found in the docs at hand, so the client takes any 2xx and nothing more.
 */
export const ANSWERS = {
  ok: { status: 200, body: "ok" },
  invalidPayload: { status: 400, body: "invalid_payload" },
  actionProhibited: { status: 403, body: "action_prohibited" },
  noService: { status: 404, body: "no_service" },
  channelNotFound: { status: 404, body: "channel_not_found" },
  channelIsArchived: { status: 410, body: "channel_is_archived" },
  rollupError: { status: 500, body: "rollup_error" },
  rateLimited: { status: 429, body: "rate_limited" },
} as const;

export type Answer = keyof typeof ANSWERS;

/** How the fake answers now: one of the documented answers, or never (a webhook that hangs). */
export type Mode = Answer | "hang";

/**
 * A fake incoming webhook (Slack-style) on 127.0.0.1:0, at Slack's path shape
 * `/services/T…/B…/…`: records every post; answers as `mode` says, by default
 * Mattermost's and Slack's 200 "ok", which takes only a JSON body with a string `text`
 * (else 400 invalid_payload, as Slack). `texts` are the alerts it took.
 */
export async function startFakeWebhook() {
  let mode: Mode = "ok";
  let retryAfter = "1";
  const hanging: (() => void)[] = [];
  const delivered: string[] = [];
  const fake = await startFake({
    "POST /services/**": (req) => {
      if (mode === "hang") return new Promise<Response>((resolve) => hanging.push(() => resolve(plain(ANSWERS.rollupError))));
      if (mode !== "ok") return plain(ANSWERS[mode], mode === "rateLimited" ? { "retry-after": retryAfter } : {});
      const text = textOf(req.body);
      if (text === undefined) return plain(ANSWERS.invalidPayload);
      delivered.push(text);
      return plain(ANSWERS.ok);
    },
  });
  const taken = () => fake.requests.filter((r) => r.path.startsWith("/services/")).map((r) => textOf(r.body)).filter((t) => t !== undefined);
  return {
    /** The URL to set as ALERT_WEBHOOK_URL; its last part stands for Slack's secret. */
    url: `${fake.url}/services/T0001/B0001/secret-webhook-token`,
    requests: fake.requests,
    /** The texts of every post, taken or not. */
    posted: taken,
    /** From now on, answer so (a 429 with `Retry-After: retryAfterSeconds`). */
    answer(next: Mode, retryAfterSeconds = "1"): void {
      mode = next;
      retryAfter = retryAfterSeconds;
      if (next !== "hang") for (const release of hanging.splice(0)) release();
    },
    /** The texts it answered 200 "ok" to, in order. */
    delivered,
    close: async () => {
      for (const release of hanging.splice(0)) release();
      await fake.close();
    },
  };
}

function plain(answer: { status: number; body: string }, headers: Record<string, string> = {}): Response {
  return new Response(answer.body, { status: answer.status, headers: { "content-type": "text/plain", ...headers } });
}

function textOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { text?: unknown };
    return typeof parsed.text === "string" ? parsed.text : undefined;
  } catch {
    return undefined;
  }
}
