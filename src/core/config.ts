import { createPublicKey, type KeyObject } from "node:crypto";
import { z } from "zod";
import { ConfigError } from "./errors.ts";
import { parseEncryptionKey } from "./sealer.ts";
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
  sms: { apiUrl: string; apiKey: string; senderId: string };
  inboundApiKey: string;
  databasePath: string;
  host: string;
  port: number;
  logLevel: LogLevel;
  /** AES-256-GCM key for tokens and API keys at rest; undefined stores them plain. */
  encryptionKey: Buffer | undefined;
}

export const LOG_LEVELS = ["silent", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const httpUrl = z
  .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
  .transform((url) => url.replace(/\/+$/, ""));

const schema = z.object({
  BASE_URL: httpUrl.optional(),
  CRM_CLIENT_ID: z
    .string()
    .regex(/^[0-9a-f]{24}-\S+$/i, 'must look like "<24 hex>-<suffix>"')
    .optional(),
  CRM_CLIENT_SECRET: z.string().optional(),
  CRM_API_URL: httpUrl.default("https://services.leadconnectorhq.com"),
  CRM_MARKETPLACE_URL: httpUrl.default("https://marketplace.gohighlevel.com"),
  CRM_WEBHOOK_PUBLIC_KEY: z.string().default(HIGHLEVEL_WEBHOOK_KEYS),
  CRM_PROVIDER_ID: z.string().default(""),
  SMS_API_URL: httpUrl.default("https://api.cast.ph"),
  SMS_API_KEY: z.string().default(""),
  SMS_SENDER_ID: z.string().max(11, "must be at most 11 characters").default(""),
  INBOUND_API_KEY: z.string().default(""),
  DATABASE_PATH: z.string().default("./bridge.db"),
  HOST: z.string().default("0.0.0.0"),
  PORT: z.coerce.number({ error: "must be a port number" }).int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  BRIDGE_ENCRYPTION_KEY: z
    .string()
    .refine((v) => parseEncryptionKey(v) !== undefined, "must be 32 bytes, as 64 hex characters or base64")
    .optional(),
});

type EnvName = keyof z.input<typeof schema>;

/**
 * Validates the environment once. Every problem (bad values, and missing values
 * the command needs) is reported together in one ConfigError.
 */
export function loadConfig(env: Record<string, string | undefined>, need: ConfigNeed): ResolvedConfig {
  // An empty variable means "unset", so `FOO=` in a .env falls back to the default.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ""));
  const parsed = schema.safeParse(present);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  for (const name of REQUIRED[need]) {
    if (!present[name]) problems.push(`${name}: required by this command but not set`);
  }
  const keys = parsed.success ? parseKeys(parsed.data.CRM_WEBHOOK_PUBLIC_KEY, problems) : [];
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);

  const v = parsed.data;
  const clientId = v.CRM_CLIENT_ID ?? "";
  return {
    baseUrl: v.BASE_URL ?? "",
    crm: {
      clientId,
      clientSecret: v.CRM_CLIENT_SECRET ?? "",
      appId: clientId.split("-")[0] ?? "",
      apiUrl: v.CRM_API_URL,
      marketplaceUrl: v.CRM_MARKETPLACE_URL,
      providerId: v.CRM_PROVIDER_ID,
      webhookKeys: keys,
    },
    sms: { apiUrl: v.SMS_API_URL, apiKey: v.SMS_API_KEY, senderId: v.SMS_SENDER_ID },
    inboundApiKey: v.INBOUND_API_KEY,
    databasePath: v.DATABASE_PATH,
    host: v.HOST,
    port: v.PORT,
    logLevel: v.LOG_LEVEL,
    encryptionKey: v.BRIDGE_ENCRYPTION_KEY ? parseEncryptionKey(v.BRIDGE_ENCRYPTION_KEY) : undefined,
  };
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
    INBOUND_API_KEY: config.inboundApiKey ? "(set)" : "(unset: admin API disabled)",
    DATABASE_PATH: config.databasePath,
    HOST: config.host,
    PORT: config.port,
    BRIDGE_ENCRYPTION_KEY: config.encryptionKey ? "(set: tokens and keys encrypted at rest)" : "(unset)",
  };
}

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g;

/** One or more PEM blocks; "\n" written literally (as env files often do) is accepted. */
function parseKeys(text: string, problems: string[]): KeyObject[] {
  const blocks = text.replace(/\\n/g, "\n").match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) problems.push("CRM_WEBHOOK_PUBLIC_KEY: no PEM public key found");
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
