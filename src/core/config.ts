// long: the variables are one table, each once, with the configuration they resolve to.
import type { KeyObject } from "node:crypto";
import { ConfigError } from "../errors.ts";
import * as kind from "./config-values.ts";
import { HIGHLEVEL_WEBHOOK_KEYS } from "./webhook-keys.ts";

/** What each command needs; anything else may be left unset. */
export type ConfigNeed = "serve" | "install-url" | "token" | "store";

export interface ResolvedConfig {
  baseUrl: string;
  crm: {
    clientId: string;
    clientSecret: string;
    /** The 24-hex object id before the first "-" of the client id. */
    appId: string;
    apiUrl: string;
    marketplaceUrl: string;
    providerId: string;
    webhookKeys: KeyObject[];
    /** The app's Shared Secret (CRM_SHARED_SECRET): opens the settings page's user payload; "" refuses every sign-in. */
    sharedSecret: string;
  };
  sms: {
    apiUrl: string;
    apiKey: string;
    senderId: string;
    /** A message of more parts is refused (SMS_MAX_PARTS). */
    maxParts: number;
    /** Longest a message waits out a gateway outage (SMS_HOLD_MAX), in ms. */
    holdMaxMs: number;
    /** Longest bridge waits for a delivery receipt (DLR_WAIT), in ms; 0: it does not ask. */
    dlrWaitMs: number;
    /** Cast's limit on every request from this address, all keys together (CAST_REQUESTS_PER_SECOND). */
    requestsPerSecond: number;
    /** Cast's limit on messages per account, i.e. per API key (CAST_MESSAGES_PER_SECOND). */
    messagesPerSecond: number;
    /** The source address of requests to Cast (CAST_LOCAL_ADDRESS); "": the system's choice. */
    localAddress: string;
  };
  /** Phones running SMS Gateway for Android (a location's gateway "android"). */
  android: {
    /** Every send's ttl: the phone drops a message it has not sent by then (ANDROID_SEND_DEADLINE), in ms. */
    sendDeadlineMs: number;
    /** Each phone's pace (ANDROID_MESSAGES_PER_MINUTE, ANDROID_MESSAGES_PER_HOUR). */
    messagesPerMinute: number;
    messagesPerHour: number;
  };
  /** Bearer keys of the admin API: one, or two during a rotation; [] disables it. Read by serve only. */
  inboundApiKeys: string[];
  /** A reverse proxy appends the client to X-Forwarded-For; its header names the client. */
  trustProxy: boolean;
  /** Peers (addresses, CIDR ranges) whose X-Forwarded-For counts when trustProxy. Read by serve only. */
  trustedProxies: string[];
  databasePath: string;
  /** PostgreSQL's URL (DATABASE_URL): every command uses it instead of databasePath; "" for SQLite. A secret (its password). */
  databaseUrl: string;
  host: string;
  port: number;
  logLevel: LogLevel;
  /** AES-256-GCM key for tokens and API keys at rest; undefined stores them plain. */
  encryptionKey: Buffer | undefined;
  /**
   * Companies whose installs are accepted and approved at once, and the only ones whose
   * approved locations may use SMS_API_KEY / SMS_SENDER_ID (checked at every send); empty:
   * any company may install, and its locations start pending (docs/configuration.md, "Who may use your gateway key").
   */
  allowedCompanyIds: string[];
  /** `text` lines, or one JSON object per line (LOG_FORMAT). */
  logFormat: LogFormat;
  /** How long the message log keeps a finished message (RETENTION_DAYS), in ms. */
  retentionMs: number;
  /** Below this many credits on a Cast key, a warning (LOW_BALANCE_CREDITS); 0: never. */
  lowBalanceCredits: number;
  /** Bearer of GET /metrics (METRICS_TOKEN); "" : no /metrics. */
  metricsToken: string;
  /** Where alerts to a person are posted, Slack-style (ALERT_WEBHOOK_URL); "": no alerts. A secret. */
  alertWebhookUrl: string;
  /** The IANA time zone whose months usage is counted in (USAGE_TIME_ZONE). */
  usageTimeZone: string;
}

export const LOG_LEVELS = ["silent", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** One environment variable: the one place its name, kind, default and description are written. */
export interface Variable {
  /** From the variable's text to the value bridge uses. */
  kind: kind.Kind<unknown>;
  /** What `--help` says it is for. */
  about: string;
  /** Its value when unset, written as in the environment and read by `kind` like any other. */
  default?: string;
  /** What `--help` shows as the default when `default` itself is too long to show (a PEM block). */
  shownDefault?: string;
  /** The commands that refuse to start without it. */
  requiredBy?: readonly ConfigNeed[];
  /** Read by serve only: other commands neither check it nor load what checking it needs. */
  serveOnly?: true;
}

/**
 * Every variable of bridge's configuration, in the order `--help` lists them. An empty
 * variable counts as unset, so `FOO=` in a .env falls back to the default.
 */
export const VARIABLES = {
  BASE_URL: { kind: kind.httpUrl, about: "public address of this service, no trailing slash", requiredBy: ["serve", "install-url"] },
  CRM_CLIENT_ID: {
    kind: kind.matching(/^[0-9a-f]{24}-\S+$/i, 'must look like "<24 hex>-<suffix>"'),
    about: 'HighLevel app client id, "<24 hex>-<suffix>"',
    requiredBy: ["serve", "install-url", "token"],
  },
  CRM_CLIENT_SECRET: { kind: kind.text, about: "HighLevel app client secret", requiredBy: ["serve", "token"] },
  CRM_API_URL: { kind: kind.httpUrl, about: "HighLevel API", default: "https://services.leadconnectorhq.com" },
  CRM_MARKETPLACE_URL: { kind: kind.httpUrl, about: "HighLevel authorization page", default: "https://marketplace.gohighlevel.com" },
  CRM_WEBHOOK_PUBLIC_KEY: {
    kind: kind.webhookKeys,
    about: "PEM key(s) that sign webhooks",
    default: HIGHLEVEL_WEBHOOK_KEYS,
    shownDefault: "HighLevel's own",
    serveOnly: true,
  },
  CRM_SHARED_SECRET: {
    kind: kind.text,
    about: "the HighLevel app's Shared Secret: signs users in to the settings page (GET /app); unset: the page refuses every sign-in",
    serveOnly: true,
  },
  CRM_PROVIDER_ID: { kind: kind.text, about: "the app's conversation provider id: replies are posted with it; unset: every reply is refused (503)" },
  SMS_API_URL: { kind: kind.httpUrl, about: "Cast.ph API", default: "https://api.cast.ph" },
  SMS_API_KEY: {
    kind: kind.obeying(kind.API_KEY),
    about: "default gateway API key (a location's own wins); unset: keyless locations fail every SMS",
  },
  SMS_SENDER_ID: {
    kind: kind.obeying(kind.SENDER_ID),
    about: "default sender ID (a location's own wins); unset: the gateway's default",
  },
  SMS_MAX_PARTS: { kind: kind.wholeNumber(1, 1000), about: "a message of more parts is refused", default: "10" },
  SMS_HOLD_MAX: { kind: kind.duration(), about: "longest a message waits out a gateway outage or a held key", default: "1h" },
  DLR_WAIT: { kind: kind.duration({ zero: true }), about: "longest wait for a delivery receipt; 0: do not ask", default: "30m" },
  CAST_REQUESTS_PER_SECOND: { kind: kind.rate, about: "Cast's limit on all requests of this server", default: "30" },
  CAST_MESSAGES_PER_SECOND: { kind: kind.rate, about: "Cast's limit on messages per API key", default: "10" },
  CAST_LOCAL_ADDRESS: { kind: kind.ipAddress, about: "source address (IPv4 or IPv6) of requests to Cast, one of this host's; unset: the system's choice" },
  ANDROID_SEND_DEADLINE: { kind: kind.duration(), about: "every phone send's ttl: a message a phone (gateway android) has not sent by then is dropped unsent by the phone", default: "10m" },
  ANDROID_MESSAGES_PER_MINUTE: { kind: kind.wholeNumber(1, 10_000), about: "messages a phone (gateway android) is given per minute", default: "20" },
  ANDROID_MESSAGES_PER_HOUR: { kind: kind.wholeNumber(1, 100_000), about: "messages a phone is given in any hour (carriers allow a SIM about 30-200)", default: "100" },
  ALLOWED_COMPANY_IDS: {
    kind: kind.idList,
    about:
      "companies allowed to install; only their approved locations use the defaults above, checked at every send; unset: any may install, its locations wait for `locations approve`",
  },
  INBOUND_API_KEY: {
    kind: kind.adminKeys,
    about: "bearer key of /api/admin/*, at least 24 characters (openssl rand -hex 24); two, comma-separated, while rotating; unset: no admin API",
    serveOnly: true,
  },
  TRUST_PROXY: { kind: kind.yesNo, about: "1: a reverse proxy appends the client to X-Forwarded-For", default: "0" },
  TRUSTED_PROXIES: {
    kind: kind.proxies,
    about: "the peers whose X-Forwarded-For counts: IPs or CIDR ranges",
    default: "127.0.0.1,::1",
    serveOnly: true,
  },
  DATABASE_PATH: { kind: kind.text, about: "SQLite file; --db overrides it; ignored when DATABASE_URL is set", default: "./bridge.db" },
  DATABASE_URL: {
    kind: kind.postgresUrl,
    about: "PostgreSQL instead of SQLite, shared by several servers: postgres://USER:PASSWORD@HOST:PORT/DB (sslmode honoured; the password may come from PGPASSWORD or ~/.pgpass)",
  },
  HOST: { kind: kind.text, about: "address serve listens on", default: "0.0.0.0" },
  PORT: { kind: kind.port, about: "port serve listens on", default: "3000" },
  LOG_LEVEL: { kind: kind.oneOf(LOG_LEVELS), about: LOG_LEVELS.join("|"), default: "info" },
  LOG_FORMAT: { kind: kind.oneOf(LOG_FORMATS), about: "text|json: json writes one JSON object per line", default: "text" },
  RETENTION_DAYS: { kind: kind.wholeNumber(1, 3650), about: "how long the message log keeps a finished message (usage is kept apart, for ever)", default: "30" },
  USAGE_TIME_ZONE: { kind: kind.timeZone, about: "the IANA time zone whose calendar months usage and monthly caps count in", default: "Asia/Manila" },
  LOW_BALANCE_CREDITS: { kind: kind.wholeNumber(0, 1_000_000_000), about: "warn when a Cast key's balance is below this; 0: never", default: "500" },
  METRICS_TOKEN: { kind: kind.bearer, about: "bearer of GET /metrics, at least 24 characters; unset: no /metrics" },
  ALERT_WEBHOOK_URL: { kind: kind.webhookUrl, about: "incoming webhook (Slack, Mattermost, Discord's …/slack) told when something needs a person and when it is over; https; unset: no alerts" },
  BRIDGE_ENCRYPTION_KEY: { kind: kind.encryptionKey, about: "32-byte key (64 hex or base64): encrypt tokens and API keys at rest" },
} as const satisfies Record<string, Variable>;

type Name = keyof typeof VARIABLES;
const NAMES = Object.keys(VARIABLES) as Name[];

type Value<N extends Name> = ReturnType<(typeof VARIABLES)[N]["kind"]>;
/** Variables every command reads, and that have a default: always present. */
type Always = { [N in Name]: (typeof VARIABLES)[N] extends { default: string; serveOnly?: never } ? N : never }[Name];
/** The environment's values, each as its kind made it; absent: unset without a default, or not read. */
type Values = { [N in Always]: Value<N> } & { [N in Exclude<Name, Always>]?: Value<N> };

/**
 * Validates the environment once. Every problem (bad values, and missing values the
 * command needs) is reported together in one ConfigError, one per variable; what is
 * valid but ignored goes to `warn`.
 */
export function loadConfig(env: Record<string, string | undefined>, need: ConfigNeed, warn?: (message: string) => void): ResolvedConfig {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of NAMES) {
    const variable: Variable = VARIABLES[name];
    if (variable.serveOnly && need !== "serve") continue;
    const set = env[name];
    const value = set !== undefined && set.trim() !== "" ? set : variable.default;
    if (value === undefined) {
      if (variable.requiredBy?.includes(need)) problems.push(`${name}: required by this command but not set`);
      continue;
    }
    try {
      values[name] = variable.kind(value);
    } catch (error) {
      if (!(error instanceof kind.Invalid)) throw error;
      problems.push(`${name}: ${error.message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  if (values.DATABASE_URL && env.DATABASE_PATH?.trim()) warn?.(BOTH_DATABASES);
  return resolve(values as Values);
}

/** Said when both DATABASE_URL and DATABASE_PATH (or --db) are set. */
export const BOTH_DATABASES = "DATABASE_URL and DATABASE_PATH (or --db) are both set: DATABASE_PATH is ignored, every command uses PostgreSQL";

function resolve(env: Values): ResolvedConfig {
  // `?? …`: what an unset variable without a default means, or one this command does not read.
  const clientId = env.CRM_CLIENT_ID ?? "";
  return {
    baseUrl: env.BASE_URL ?? "",
    crm: {
      clientId,
      clientSecret: env.CRM_CLIENT_SECRET ?? "",
      appId: clientId.split("-")[0] ?? "",
      apiUrl: env.CRM_API_URL,
      marketplaceUrl: env.CRM_MARKETPLACE_URL,
      providerId: env.CRM_PROVIDER_ID ?? "",
      webhookKeys: env.CRM_WEBHOOK_PUBLIC_KEY ?? [],
      sharedSecret: env.CRM_SHARED_SECRET ?? "",
    },
    sms: {
      apiUrl: env.SMS_API_URL,
      apiKey: env.SMS_API_KEY ?? "",
      senderId: env.SMS_SENDER_ID ?? "",
      maxParts: env.SMS_MAX_PARTS,
      holdMaxMs: env.SMS_HOLD_MAX,
      dlrWaitMs: env.DLR_WAIT,
      requestsPerSecond: env.CAST_REQUESTS_PER_SECOND,
      messagesPerSecond: env.CAST_MESSAGES_PER_SECOND,
      localAddress: env.CAST_LOCAL_ADDRESS ?? "",
    },
    android: { sendDeadlineMs: env.ANDROID_SEND_DEADLINE, messagesPerMinute: env.ANDROID_MESSAGES_PER_MINUTE, messagesPerHour: env.ANDROID_MESSAGES_PER_HOUR },
    inboundApiKeys: env.INBOUND_API_KEY ?? [],
    trustProxy: env.TRUST_PROXY,
    trustedProxies: env.TRUSTED_PROXIES ?? [],
    databasePath: env.DATABASE_PATH,
    databaseUrl: env.DATABASE_URL ?? "",
    host: env.HOST,
    port: env.PORT,
    logLevel: env.LOG_LEVEL,
    encryptionKey: env.BRIDGE_ENCRYPTION_KEY,
    allowedCompanyIds: env.ALLOWED_COMPANY_IDS ?? [],
    logFormat: env.LOG_FORMAT,
    retentionMs: env.RETENTION_DAYS * 86_400_000,
    lowBalanceCredits: env.LOW_BALANCE_CREDITS,
    metricsToken: env.METRICS_TOKEN ?? "",
    alertWebhookUrl: env.ALERT_WEBHOOK_URL ?? "",
    usageTimeZone: env.USAGE_TIME_ZONE,
  };
}
