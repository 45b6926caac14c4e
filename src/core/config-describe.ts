// What `serve` logs of its configuration at start: every variable, secrets masked.
import type { ResolvedConfig, VARIABLES } from "./config.ts";
import { maskDatabaseUrl } from "../store/postgres/url.ts";

/** Secrets replaced by their masked form: what `serve` logs at start. */
export function describeConfig(config: ResolvedConfig): Record<keyof typeof VARIABLES, string | number> {
  return {
    BASE_URL: config.baseUrl,
    CRM_CLIENT_ID: config.crm.clientId,
    CRM_CLIENT_SECRET: config.crm.clientSecret ? "(set)" : "(unset)",
    CRM_API_URL: config.crm.apiUrl,
    CRM_MARKETPLACE_URL: config.crm.marketplaceUrl,
    CRM_WEBHOOK_PUBLIC_KEY: `${config.crm.webhookKeys.length} key(s): ${config.crm.webhookKeys.map((k) => k.asymmetricKeyType).join(", ")}`,
    CRM_SHARED_SECRET: config.crm.sharedSecret ? "(set)" : "(unset: the settings page refuses every sign-in)",
    CRM_PROVIDER_ID: config.crm.providerId || "(unset)",
    SMS_API_URL: config.sms.apiUrl,
    SMS_API_KEY: config.sms.apiKey ? "(set)" : "(unset)",
    SMS_SENDER_ID: config.sms.senderId || "(gateway default)",
    SMS_MAX_PARTS: config.sms.maxParts,
    SMS_HOLD_MAX: `${config.sms.holdMaxMs / 1000} s`,
    DLR_WAIT: config.sms.dlrWaitMs ? `${config.sms.dlrWaitMs / 1000} s` : "0 (receipts not asked for)",
    CAST_REQUESTS_PER_SECOND: config.sms.requestsPerSecond,
    CAST_MESSAGES_PER_SECOND: config.sms.messagesPerSecond,
    CAST_LOCAL_ADDRESS: config.sms.localAddress || "(unset: the system's choice)",
    ANDROID_SEND_DEADLINE: `${config.android.sendDeadlineMs / 1000} s`,
    ANDROID_MESSAGES_PER_MINUTE: config.android.messagesPerMinute,
    ANDROID_MESSAGES_PER_HOUR: config.android.messagesPerHour,
    INBOUND_API_KEY: describeKeys(config.inboundApiKeys),
    TRUST_PROXY: config.trustProxy ? "yes: clients named by X-Forwarded-For from TRUSTED_PROXIES" : "no",
    TRUSTED_PROXIES: config.trustedProxies.join(",") || "(none)",
    DATABASE_PATH: config.databaseUrl ? `(ignored: DATABASE_URL is set)` : config.databasePath,
    DATABASE_URL: config.databaseUrl ? maskDatabaseUrl(config.databaseUrl) : "(unset: SQLite at DATABASE_PATH)",
    HOST: config.host,
    PORT: config.port,
    LOG_LEVEL: config.logLevel,
    BRIDGE_ENCRYPTION_KEY: config.encryptionKey ? "(set: tokens and keys encrypted at rest)" : "(unset)",
    ALLOWED_COMPANY_IDS:
      config.allowedCompanyIds.join(",") || "(unset: any company may install; its locations wait for approval)",
    LOG_FORMAT: config.logFormat,
    RETENTION_DAYS: config.retentionMs / 86_400_000,
    LOW_BALANCE_CREDITS: config.lowBalanceCredits || "0 (no warning)",
    METRICS_TOKEN: config.metricsToken ? "(set: /metrics enabled)" : "(unset: no /metrics)",
    ALERT_WEBHOOK_URL: config.alertWebhookUrl ? `(set: alerts to ${new URL(config.alertWebhookUrl).host})` : "(unset: no alerts)",
    USAGE_TIME_ZONE: config.usageTimeZone,
  };
}

function describeKeys(keys: string[]): string {
  if (keys.length === 0) return "(unset: admin API disabled)";
  return keys.length === 1 ? "(set)" : `(set: ${keys.length} keys, rotating)`;
}
