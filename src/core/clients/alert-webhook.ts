import { wallClock } from "../clock.ts";
import { printable } from "../printable.ts";
import { retryAfterMs } from "../retry.ts";
import { callFailure, hostOf } from "./network.ts";
import { callRemote } from "./transport.ts";

/** Each post gets this long: a webhook that hangs holds only the alert loop, and only this long. */
export const ALERT_TIMEOUT_MS = 10_000;

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
      body: JSON.stringify({ text }),
      timeout: timeoutMs,
    });
  } catch (error) {
    return { ok: false, reason: callFailure(error, host, timeoutMs).message };
  }
  if (res.ok) return { ok: true };
  const said = printable((res._data ?? "").trim().slice(0, 200));
  const reason = `${host} answered ${res.status}${said ? `: ${said}` : ""}`;
  if (res.status === 429) return { ok: false, reason, retryAfterMs: retryAfterMs(res.headers.get("retry-after"), now(), 60 * 60_000) ?? 60_000 };
  return { ok: false, reason };
}
