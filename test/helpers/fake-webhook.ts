import { documented } from "./fixtures.ts";
import { startFake } from "./http.ts";

/** A receiver's documented answer to an incoming webhook's POST. */
export interface DocumentedAnswer {
  status: number;
  contentType: string;
  body: string;
}

/**
 * The receivers' documented answers (Slack's, Mattermost's), as test/documented/alert-webhook
 * quotes them from their documentation; fake-webhook-contract.test.ts holds the fake to them.
 */
export const ANSWERS = documented<Record<"ok" | "invalidPayload" | "actionProhibited" | "noService" | "channelNotFound" | "channelIsArchived" | "rollupError" | "rateLimited", DocumentedAnswer>>(
  "alert-webhook",
  "answers.json",
);

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

function plain(answer: DocumentedAnswer, headers: Record<string, string> = {}): Response {
  return new Response(answer.body, { status: answer.status, headers: { "content-type": answer.contentType, ...headers } });
}

function textOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { text?: unknown };
    return typeof parsed.text === "string" ? parsed.text : undefined;
  } catch {
    return undefined;
  }
}
