import { wallClock } from "../clock.ts";
import { printable } from "../printable.ts";
import { retryAfterMs } from "../retry.ts";
import { callFailure, hostOf } from "./network.ts";
import { callRemote } from "./transport.ts";

/** Each post gets this long: a webhook that hangs holds only the alert loop, and only this long. */
export const ALERT_TIMEOUT_MS = 10_000;
/** What of a webhook's answer is read: its status and a few words say all (Slack's "ok", `invalid_payload`). */
const ALERT_ANSWER_BYTES = 4096;

/** What a post of an alert came to: taken, or not, with why and (a 429) when to try again. */
export type AlertPost = { ok: true } | { ok: false; reason: string; retryAfterMs?: number };

/**
 * Posts `{"text": …}` to an incoming webhook that takes Slack's message shape: Slack,
 * Mattermost, Google Chat, Discord's `/slack` endpoint (docs/alerts.md). A 2xx is taken
 * (Slack and Mattermost answer 200 "ok"); any other answer is not, and its few words
 * (Slack's `invalid_payload`, `channel_not_found`, …) are the reason. The URL is a
 * secret (whoever holds it may post): a reason names only its host.
 */
export async function postAlert(url: string, text: string, now: () => number = wallClock, timeoutMs = ALERT_TIMEOUT_MS): Promise<AlertPost> {
  const host = hostOf(url);
  let res: Awaited<ReturnType<typeof callRemote>>;
  try {
    res = await callRemote(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: inert(text) }),
      timeout: timeoutMs,
      maxBodyBytes: ALERT_ANSWER_BYTES,
    });
  } catch (error) {
    return { ok: false, reason: callFailure(error, host, timeoutMs).message };
  }
  if (res.ok) return { ok: true };
  const said = printable(withoutUrlSecrets((res._data ?? "").trim(), url).slice(0, 200));
  const reason = `${host} answered ${res.status}${said ? `: ${said}` : ""}`;
  if (res.status === 429) return { ok: false, reason, retryAfterMs: retryAfterMs(res.headers.get("retry-after"), now(), 60 * 60_000) ?? 60_000 };
  return { ok: false, reason };
}

/**
 * The receiver's words with the URL's secret parts (its path's segments and query values
 * of 8 characters or more: Slack's and Discord's token, Google Chat's key and token) as
 * `***`: a receiver that echoes the URL it was called at shows nothing of it in a reason.
 */
function withoutUrlSecrets(text: string, url: string): string {
  const { pathname, searchParams } = new URL(url);
  const parts = [...pathname.split("/"), ...searchParams.values()].filter((p) => p.length >= 8);
  return parts.sort((a, b) => b.length - a.length).reduce((t, p) => t.replaceAll(p, "***"), text);
}

/**
 * The text with nothing a receiver would obey: an alert quotes outside words (Cast's and
 * HighLevel's error answers, a phone's) that must not ping a whole channel or show a link.
 * `<` and `>` open Slack's and Google Chat's control sequences (`<!channel>`,
 * `<https://evil|click>`, `<users/all>`): shown as `‹` and `›`. `@everyone`, `@here`,
 * `@channel` and `@all` notify in Discord and Mattermost, and `[text](url)` is a link
 * there: a zero-width space after the `@`, and between `]` and `(`, makes them text.
 * bridge's own texts use none of these.
 */
export function inert(text: string): string {
  return text
    .replaceAll("<", "\u2039")
    .replaceAll(">", "\u203a")
    .replace(/@(?=(everyone|here|channel|all)\b)/gi, "@\u200b")
    .replaceAll("](", "]\u200b(");
}
