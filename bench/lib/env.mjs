// The environment every bridge of the benchmark runs with (bench/run.mjs, bench/ab.mjs).
import { PUBLIC_KEY_PEM } from "./webhooks.mjs";

/** The admin API's key (INBOUND_API_KEY), also the bearer of POST /api/inbound. */
export const ADMIN_KEY = "bench-admin-key-0123456789abcdef";

/** bridge's variables: its database, the fakes' addresses, and the addon cache of this run. */
export function bridgeEnv({ cache, databasePath, crmUrl, smsUrl }) {
  return {
    XDG_CACHE_HOME: cache,
    BASE_URL: "http://127.0.0.1",
    CRM_CLIENT_ID: "0123456789abcdef01234567-bench",
    CRM_CLIENT_SECRET: "bench-client-secret",
    CRM_API_URL: crmUrl,
    CRM_WEBHOOK_PUBLIC_KEY: PUBLIC_KEY_PEM,
    SMS_API_URL: smsUrl,
    SMS_API_KEY: "bench-sms-api-key-0123456789",
    ALLOWED_COMPANY_IDS: "company-bench",
    INBOUND_API_KEY: ADMIN_KEY,
    DATABASE_PATH: databasePath,
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info", // the default: what a real deployment pays for logging
  };
}
