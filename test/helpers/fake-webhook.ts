import { textFixture, type TextAnswer } from "./fixtures.ts";
import { startFake } from "./http.ts";

/**
 * Each answer the fake gives, by the file of test/documented/alert-webhook that holds it
 * (Slack's and Mattermost's documented answers, that folder's README quoting its sources);
 * fake-webhook-contract.test.ts holds the fake to them.
 */
export const ANSWER_FILES = {
  ok: "post-200.txt",
  invalidPayload: "invalid-payload-400.txt",
  actionProhibited: "action-prohibited-403.txt",
  noService: "no-service-404.txt",
  channelNotFound: "channel-not-found-404.txt",
  channelIsArchived: "channel-is-archived-410.txt",
  rollupError: "rollup-error-500.txt",
  rateLimited: "error-429.txt",
} as const;

export type Answer = keyof typeof ANSWER_FILES;

/** The answers, read: `ANSWERS.noService` is 404 `no_service`. */
export const ANSWERS = Object.fromEntries(
  Object.entries(ANSWER_FILES).map(([answer, file]) => [answer, textFixture("alert-webhook", file)]),
) as Record<Answer, TextAnswer>;

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

/**
 * An answer as the receivers send it: a plain-text body, `Content-Type: text/plain` (Mattermost's
 * documented header; Slack's pages say only "plain text").
 */
function plain(answer: TextAnswer, headers: Record<string, string> = {}): Response {
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
