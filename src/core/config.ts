import type { KeyObject } from "node:crypto";
import { durationMs } from "./duration.ts";
import { ConfigError } from "../errors.ts";
import { ID_RULE, isId } from "./ids.ts";
import { parseEncryptionKey } from "../db/sealer.ts";
import { HIGHLEVEL_WEBHOOK_KEYS } from "./webhook-keys.ts";

/** What each command needs; anything else may be left unset. */
export type ConfigNeed = "serve" | "install-url" | "token" | "store";

const REQUIRED: Record<ConfigNeed, readonly EnvName[]> = {
  serve: ["BASE_URL", "CRM_CLIENT_ID", "CRM_CLIENT_SECRET"],
  "install-url": ["BASE_URL", "CRM_CLIENT_ID"],
  token: ["CRM_CLIENT_ID", "CRM_CLIENT_SECRET"],
  store: [],
};

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
  };
  /** Bearer keys of the admin API: one, or two during a rotation; [] disables it. Read by serve only. */
  inboundApiKeys: string[];
  /** A reverse proxy appends the client to X-Forwarded-For; its header names the client. */
  trustProxy: boolean;
  /** Peers (addresses, CIDR ranges) whose X-Forwarded-For counts when trustProxy. Read by serve only. */
  trustedProxies: string[];
  databasePath: string;
  host: string;
  port: number;
  logLevel: LogLevel;
  /** AES-256-GCM key for tokens and API keys at rest; undefined stores them plain. */
  encryptionKey: Buffer | undefined;
  /**
   * Companies whose installs are accepted and approved at once; empty: any company may
   * install, and its locations start pending (CONTRACT.md 12).
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
}

export const LOG_LEVELS = ["silent", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

type EnvName =
  | "BASE_URL"
  | "CRM_CLIENT_ID"
  | "CRM_CLIENT_SECRET"
  | "CRM_API_URL"
  | "CRM_MARKETPLACE_URL"
  | "CRM_WEBHOOK_PUBLIC_KEY"
  | "CRM_PROVIDER_ID"
  | "SMS_API_URL"
  | "SMS_API_KEY"
  | "SMS_SENDER_ID"
  | "INBOUND_API_KEY"
  | "TRUST_PROXY"
  | "TRUSTED_PROXIES"
  | "DATABASE_PATH"
  | "HOST"
  | "PORT"
  | "LOG_LEVEL"
  | "BRIDGE_ENCRYPTION_KEY"
  | "ALLOWED_COMPANY_IDS"
  | "SMS_MAX_PARTS"
  | "SMS_HOLD_MAX"
  | "DLR_WAIT"
  | "CAST_REQUESTS_PER_SECOND"
  | "CAST_MESSAGES_PER_SECOND"
  | "LOG_FORMAT"
  | "RETENTION_DAYS"
  | "LOW_BALANCE_CREDITS"
  | "METRICS_TOKEN";

/**
 * Validates the environment once. Every problem (bad values, and missing values
 * the command needs) is reported together in one ConfigError.
 *
 * A table of small parsers rather than a zod schema: every CLI command starts
 * here, and loading zod would cost a third of a `bridge locations list`.
 */
export function loadConfig(env: Record<string, string | undefined>, need: ConfigNeed): ResolvedConfig {
  const problems: string[] = [];
  function read<T>(name: EnvName, parse: (value: string) => T, fallback: T): T {
    const value = env[name];
    // An empty variable means "unset", so `FOO=` in a .env falls back to the default.
    if (value === undefined || value.trim() === "") {
      if (REQUIRED[need].includes(name)) problems.push(`${name}: required by this command but not set`);
      return fallback;
    }
    try {
      return parse(value);
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      problems.push(`${name}: ${error.message}`);
      return fallback;
    }
  }

  const clientId = read("CRM_CLIENT_ID", matching(/^[0-9a-f]{24}-\S+$/i, 'must look like "<24 hex>-<suffix>"'), "");
  const keys = read("CRM_WEBHOOK_PUBLIC_KEY", text, HIGHLEVEL_WEBHOOK_KEYS);
  const config: ResolvedConfig = {
    baseUrl: read("BASE_URL", httpUrl, ""),
    crm: {
      clientId,
      clientSecret: read("CRM_CLIENT_SECRET", text, ""),
      appId: clientId.split("-")[0] ?? "",
      apiUrl: read("CRM_API_URL", httpUrl, "https://services.leadconnectorhq.com"),
      marketplaceUrl: read("CRM_MARKETPLACE_URL", httpUrl, "https://marketplace.gohighlevel.com"),
      providerId: read("CRM_PROVIDER_ID", text, ""),
      // Only the server verifies webhooks; parsing PEM keys would load node:crypto for every command.
      webhookKeys: need === "serve" ? parseKeys(keys, problems) : [],
    },
    sms: {
      apiUrl: read("SMS_API_URL", httpUrl, "https://api.cast.ph"),
      apiKey: read("SMS_API_KEY", obeying(API_KEY), ""),
      senderId: read("SMS_SENDER_ID", obeying(SENDER_ID), ""),
      maxParts: read("SMS_MAX_PARTS", wholeNumber(1, 1000), 10),
      holdMaxMs: read("SMS_HOLD_MAX", duration, 60 * 60_000),
      dlrWaitMs: read("DLR_WAIT", (value) => (value.trim() === "0" ? 0 : duration(value)), 30 * 60_000),
      requestsPerSecond: read("CAST_REQUESTS_PER_SECOND", rate, 30),
      messagesPerSecond: read("CAST_MESSAGES_PER_SECOND", rate, 10),
    },
    // Only serve checks the bearer; a CLI command is not refused over a key it never uses.
    inboundApiKeys: need === "serve" ? read("INBOUND_API_KEY", adminKeys, []) : [],
    trustProxy: read("TRUST_PROXY", yesNo, false),
    trustedProxies: need === "serve" ? read("TRUSTED_PROXIES", proxies, ["127.0.0.1", "::1"]) : [],
    databasePath: read("DATABASE_PATH", text, "./bridge.db"),
    host: read("HOST", text, "0.0.0.0"),
    port: read("PORT", port, 3000),
    logLevel: read("LOG_LEVEL", oneOf(LOG_LEVELS), "info"),
    encryptionKey: read("BRIDGE_ENCRYPTION_KEY", encryptionKey, undefined),
    allowedCompanyIds: read("ALLOWED_COMPANY_IDS", idList, []),
    logFormat: read("LOG_FORMAT", oneOf(LOG_FORMATS), "text"),
    retentionMs: read("RETENTION_DAYS", wholeNumber(1, 3650), 30) * 86_400_000,
    lowBalanceCredits: read("LOW_BALANCE_CREDITS", wholeNumber(0, 1_000_000_000), 500),
    metricsToken: read("METRICS_TOKEN", metricsToken, ""),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Secrets replaced by their masked form: what `serve` logs at start. */
export function describeConfig(config: ResolvedConfig): Record<string, string | number> {
  return {
    BASE_URL: config.baseUrl,
    CRM_CLIENT_ID: config.crm.clientId,
    CRM_CLIENT_SECRET: config.crm.clientSecret ? "(set)" : "(unset)",
    CRM_API_URL: config.crm.apiUrl,
    CRM_MARKETPLACE_URL: config.crm.marketplaceUrl,
    CRM_WEBHOOK_PUBLIC_KEY: `${config.crm.webhookKeys.length} key(s): ${config.crm.webhookKeys.map((k) => k.asymmetricKeyType).join(", ")}`,
    SMS_API_URL: config.sms.apiUrl,
    SMS_API_KEY: config.sms.apiKey ? "(set)" : "(unset)",
    SMS_SENDER_ID: config.sms.senderId || "(gateway default)",
    SMS_MAX_PARTS: config.sms.maxParts,
    SMS_HOLD_MAX: `${config.sms.holdMaxMs / 1000} s`,
    DLR_WAIT: config.sms.dlrWaitMs ? `${config.sms.dlrWaitMs / 1000} s` : "0 (receipts not asked for)",
    CAST_REQUESTS_PER_SECOND: config.sms.requestsPerSecond,
    CAST_MESSAGES_PER_SECOND: config.sms.messagesPerSecond,
    INBOUND_API_KEY: describeKeys(config.inboundApiKeys),
    TRUST_PROXY: config.trustProxy ? "yes: clients named by X-Forwarded-For from TRUSTED_PROXIES" : "no",
    TRUSTED_PROXIES: config.trustedProxies.join(",") || "(none)",
    DATABASE_PATH: config.databasePath,
    HOST: config.host,
    PORT: config.port,
    BRIDGE_ENCRYPTION_KEY: config.encryptionKey ? "(set: tokens and keys encrypted at rest)" : "(unset)",
    ALLOWED_COMPANY_IDS:
      config.allowedCompanyIds.join(",") || "(unset: any company may install; its locations wait for approval)",
    LOG_FORMAT: config.logFormat,
    RETENTION_DAYS: config.retentionMs / 86_400_000,
    LOW_BALANCE_CREDITS: config.lowBalanceCredits || "0 (no warning)",
    METRICS_TOKEN: config.metricsToken ? "(set: /metrics enabled)" : "(unset: no /metrics)",
  };
}

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g;

/** One or more PEM blocks; "\n" written literally (as env files often do) is accepted. */
function parseKeys(value: string, problems: string[]): KeyObject[] {
  const blocks = value.replace(/\\n/g, "\n").match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) problems.push("CRM_WEBHOOK_PUBLIC_KEY: no PEM public key found");
  const { createPublicKey } = process.getBuiltinModule("node:crypto");
  const keys: KeyObject[] = [];
  for (const [i, pem] of blocks.entries()) {
    try {
      const key = createPublicKey(pem);
      if (!["ed25519", "ec", "rsa"].includes(key.asymmetricKeyType ?? "")) {
        problems.push(`CRM_WEBHOOK_PUBLIC_KEY: key ${i + 1} is ${key.asymmetricKeyType}, expected Ed25519, EC P-256 or RSA`);
      } else if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
        problems.push(`CRM_WEBHOOK_PUBLIC_KEY: key ${i + 1} is not on curve P-256`);
      } else {
        keys.push(key);
      }
    } catch {
      problems.push(`CRM_WEBHOOK_PUBLIC_KEY: key ${i + 1} is not a valid PEM public key`);
    }
  }
  return keys;
}

/** Thrown by a variable's parser: what is wrong with the value. */
class Invalid extends Error {}

const text = (value: string) => value;

/** An http(s) base address: paths are appended to it, so no query or fragment. */
function httpUrl(value: string): string {
  const trimmed = value.trim();
  const url = URL.parse(trimmed);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) {
    throw new Invalid("must be an http(s) URL");
  }
  if (/[?#]/.test(trimmed)) throw new Invalid("must be an http(s) URL without a query or fragment");
  return trimmed.replace(/\/+$/, "");
}

function matching(pattern: RegExp, message: string) {
  return (value: string) => {
    if (!pattern.test(value)) throw new Invalid(message);
    return value;
  };
}

/** What a value may hold, for the environment and a location's own setting alike. */
export interface Rule {
  maxLength: number;
  pattern: RegExp;
  /** Completes "<name> …" when the pattern does not match. */
  says: string;
}

/** Cast.ph's sender names: up to 20 characters; "" means the gateway's default. */
export const SENDER_ID: Rule = {
  maxLength: 20,
  pattern: /^(?:[A-Za-z0-9](?:[\w .-]*[\w.-])?)?$/,
  says: "may hold letters, digits, spaces, '.', '-' and '_', starting with a letter or digit and not ending in a space",
};

/** A key that travels in an HTTP header (a gateway's, the admin bearer): printable ASCII, no spaces. */
export const API_KEY: Rule = {
  maxLength: 256,
  pattern: /^[\x21-\x7e]*$/,
  says: "may hold printable ASCII characters only, no spaces",
};

function obeying(rule: Rule) {
  return (value: string) => {
    if (value.length > rule.maxLength) throw new Invalid(`must be at most ${rule.maxLength} characters`);
    if (!rule.pattern.test(value)) throw new Invalid(rule.says);
    return value;
  };
}

/** Long enough that guessing cannot pay, however many tries the throttle lets through. */
const ADMIN_KEY_MIN = 24;

/** INBOUND_API_KEY: one key, or two (old,new) while clients move to the new one. */
function adminKeys(value: string): string[] {
  const keys = value.split(",");
  if (keys.length > 2) throw new Invalid("holds more than two keys (two, comma-separated, only during a rotation)");
  for (const key of keys) {
    obeying(API_KEY)(key);
    if (key.length < ADMIN_KEY_MIN) {
      const subject = keys.length > 1 ? "each key must be" : "must be";
      throw new Invalid(`${subject} at least ${ADMIN_KEY_MIN} characters; make one with \`openssl rand -hex 24\``);
    }
  }
  return keys;
}

/** METRICS_TOKEN: a bearer like the admin key, as long, so it cannot be guessed either. */
function metricsToken(value: string): string {
  obeying(API_KEY)(value);
  if (value.length < ADMIN_KEY_MIN) throw new Invalid(`must be at least ${ADMIN_KEY_MIN} characters; make one with \`openssl rand -hex 24\``);
  return value;
}

function describeKeys(keys: string[]): string {
  if (keys.length === 0) return "(unset: admin API disabled)";
  return keys.length === 1 ? "(set)" : `(set: ${keys.length} keys, rotating)`;
}

/** TRUSTED_PROXIES: IP addresses or CIDR ranges, comma-separated. */
function proxies(value: string): string[] {
  const { isIP } = process.getBuiltinModule("node:net"); // serve only: no node:net for the CLI
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address = "", prefix, ...more] = entry.split("/");
    const version = address.includes("%") ? 0 : isIP(address); // no zone ids (fe80::1%eth0): not supported
    const bits = version === 4 ? 32 : version === 6 ? 128 : 0;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (!bits || !prefixOk || more.length > 0) {
      throw new Invalid(`${JSON.stringify(entry.slice(0, 60))} is not an IP address or CIDR range (such as 10.0.0.0/8)`);
    }
  }
  return entries;
}

function oneOf<T extends string>(allowed: readonly T[]) {
  return (value: string): T => {
    const found = allowed.find((a) => a === value);
    if (found === undefined) throw new Invalid(`must be one of ${allowed.join(", ")}`);
    return found;
  };
}

function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value.trim());
    if (!/^\d+$/.test(value.trim()) || n < min || n > max) throw new Invalid(`must be a whole number from ${min} to ${max}`);
    return n;
  };
}

/** A rate per second: a positive number, fractions allowed (0.5 = one every 2 s). */
function rate(value: string): number {
  const n = Number(value.trim());
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || n <= 0 || n > 10_000) throw new Invalid("must be a number per second above 0 (at most 10000)");
  return n;
}

/** A duration such as `90s`, `30m`, `1h` or `2d`. */
function duration(value: string): number {
  const ms = durationMs(value);
  if (ms === undefined) throw new Invalid("must be a duration such as 90s, 30m, 1h or 2d");
  return ms;
}

function yesNo(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (["1", "true", "yes"].includes(v)) return true;
  if (["0", "false", "no"].includes(v)) return false;
  throw new Invalid("must be 1/true/yes or 0/false/no");
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 65535) throw new Invalid("must be a port number (0-65535)");
  return n;
}

/** Comma-separated HighLevel ids; spaces around them are ignored. */
function idList(value: string): string[] {
  const ids = value.split(",").map((id) => id.trim()).filter((id) => id !== "");
  const bad = ids.find((id) => !isId(id));
  if (bad !== undefined) throw new Invalid(`each comma-separated id ${ID_RULE} (${JSON.stringify(bad.slice(0, 70))} is not)`);
  return [...new Set(ids)];
}

function encryptionKey(value: string): Buffer {
  const key = parseEncryptionKey(value);
  if (!key) throw new Invalid("must be 32 bytes, as 64 hex characters or base64");
  return key;
}
