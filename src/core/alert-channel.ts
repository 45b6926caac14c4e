import type { AlertStore } from "../store/contract.ts";
import type { ResolvedConfig } from "./config.ts";
import { iso } from "./duration.ts";

/** The alert channel in `bridge status` (and GET /api/admin/status). Times are ISO 8601. */
export interface AlertChannelView {
  /** ALERT_WEBHOOK_URL is set. */
  configured: boolean;
  /** The webhook's host (its URL is a secret); null when not configured. */
  to: string | null;
  /** Alerts not yet taken by the webhook. */
  waiting: number;
  last_delivered_at: string | null;
  /** Why the latest try failed, when no alert was delivered since; null otherwise. */
  last_error: string | null;
  last_error_at: string | null;
}

/**
 * The alert channel's health, read from the database: what serve delivered and what waits.
 * Apart from the rest of core/alerts so that `bridge status` loads no HTTP client for it.
 */
export async function alertChannel(config: Pick<ResolvedConfig, "alertWebhookUrl">, alerts: Pick<AlertStore, "health">): Promise<AlertChannelView> {
  const to = config.alertWebhookUrl ? new URL(config.alertWebhookUrl).host : null;
  const h = await alerts.health();
  return {
    configured: to !== null,
    to,
    waiting: h.waiting,
    last_delivered_at: h.lastDeliveredAt === null ? null : iso(h.lastDeliveredAt),
    last_error: h.lastError,
    last_error_at: h.lastErrorAt === null ? null : iso(h.lastErrorAt),
  };
}

/** One line for a person: "to hooks.slack.com: 2 waiting, last delivered …, last error …". */
export function describeChannel(c: AlertChannelView): string {
  if (!c.configured) return "not configured (set ALERT_WEBHOOK_URL to be told when something needs a person)";
  const parts = [`${c.waiting} waiting`, `last delivered ${c.last_delivered_at ?? "never"}`];
  if (c.last_error) parts.push(`last error at ${c.last_error_at}: ${c.last_error}`);
  return `to ${c.to}: ${parts.join(", ")}`;
}

/** "bridge (sms.example.com)": which bridge speaks, from BASE_URL without the rest of its address. */
export function bridgeName(baseUrl: string): string {
  const host = URL.parse(baseUrl)?.host;
  return host ? `bridge (${host})` : "bridge";
}
