/** One environment variable, as `--help` shows it. */
interface Variable {
  name: string;
  about: string;
  default?: string;
}

/**
 * Every variable of bridge's configuration (src/core/config.ts reads these and no
 * others; a test holds the two together). `bridge --help` and `bridge serve --help`
 * both print this list.
 */
export const CONFIG_VARIABLES: readonly Variable[] = [
  { name: "BASE_URL", about: "public address of this service, no trailing slash (required: serve, install-url)" },
  { name: "CRM_CLIENT_ID", about: 'HighLevel app client id, "<24 hex>-<suffix>" (required: serve, install-url, token)' },
  { name: "CRM_CLIENT_SECRET", about: "HighLevel app client secret (required: serve, token)" },
  { name: "CRM_API_URL", about: "HighLevel API", default: "https://services.leadconnectorhq.com" },
  { name: "CRM_MARKETPLACE_URL", about: "HighLevel authorization page", default: "https://marketplace.gohighlevel.com" },
  { name: "CRM_WEBHOOK_PUBLIC_KEY", about: "PEM key(s) that sign webhooks", default: "HighLevel's own" },
  { name: "CRM_PROVIDER_ID", about: "conversation provider id (for inbound messages; not used yet)" },
  { name: "SMS_API_URL", about: "Cast.ph API", default: "https://api.cast.ph" },
  { name: "SMS_API_KEY", about: "default gateway API key (a location's own wins); unset: keyless locations fail every SMS" },
  { name: "SMS_SENDER_ID", about: "default sender ID (a location's own wins); unset: the gateway's default" },
  { name: "SMS_MAX_PARTS", about: "a message of more parts is refused", default: "10" },
  { name: "SMS_HOLD_MAX", about: "longest a message waits out a gateway outage or a held key", default: "1h" },
  { name: "DLR_WAIT", about: "longest wait for a delivery receipt; 0: do not ask", default: "30m" },
  { name: "CAST_REQUESTS_PER_SECOND", about: "Cast's limit on all requests of this server", default: "30" },
  { name: "CAST_MESSAGES_PER_SECOND", about: "Cast's limit on messages per API key", default: "10" },
  { name: "ALLOWED_COMPANY_IDS", about: "companies allowed to install and use the defaults above; unset: any may, its locations wait for `locations approve`" },
  { name: "INBOUND_API_KEY", about: "bearer key of /api/admin/*, at least 24 characters (openssl rand -hex 24); two, comma-separated, while rotating; unset: no admin API" },
  { name: "TRUST_PROXY", about: "1: a reverse proxy appends the client to X-Forwarded-For", default: "0" },
  { name: "TRUSTED_PROXIES", about: "the peers whose X-Forwarded-For counts: IPs or CIDR ranges", default: "127.0.0.1,::1" },
  { name: "DATABASE_PATH", about: "SQLite file; --db overrides it", default: "./bridge.db" },
  { name: "HOST", about: "address serve listens on", default: "0.0.0.0" },
  { name: "PORT", about: "port serve listens on", default: "3000" },
  { name: "LOG_LEVEL", about: "silent|error|warn|info|debug|trace", default: "info" },
  { name: "LOG_FORMAT", about: "text|json: json writes one JSON object per line", default: "text" },
  { name: "RETENTION_DAYS", about: "how long the message log keeps a finished message", default: "30" },
  { name: "LOW_BALANCE_CREDITS", about: "warn when a Cast key's balance is below this; 0: never", default: "500" },
  { name: "METRICS_TOKEN", about: "bearer of GET /metrics, at least 24 characters; unset: no /metrics" },
  { name: "BRIDGE_ENCRYPTION_KEY", about: "32-byte key (64 hex or base64): encrypt tokens and API keys at rest" },
];

/** What `serve` reads besides its configuration: read by Node, libuv or the executable itself. */
const SERVE_RUNTIME: readonly Variable[] = [
  { name: "XDG_CACHE_HOME", about: "where the executable unpacks its SQLite addon", default: "~/.cache" },
  { name: "UV_THREADPOOL_SIZE", about: "threads that verify webhook signatures", default: "one per CPU core, at least 2" },
  { name: "JOURNAL_STREAM", about: "set by systemd: when it names stderr, each log line starts with its syslog priority" },
  { name: "NODE_USE_ENV_PROXY", about: "1: call HighLevel and Cast through HTTPS_PROXY / HTTP_PROXY (NO_PROXY excepted)" },
  { name: "NODE_EXTRA_CA_CERTS", about: "PEM file of extra certificate authorities for HighLevel and Cast" },
];

const FROM = "also read from ./.env or --env-file; the real environment wins";

/** The root command's list: the configuration, for every command. */
export function environmentHelp(): string {
  return `\nEnvironment (${FROM}):\n${lines(CONFIG_VARIABLES)}\n\nExit codes: 0 success, 1 failure, 2 usage error.`;
}

/** `serve --help`: everything serve reads. */
export function serveEnvironmentHelp(): string {
  return `\nEnvironment read by serve (${FROM}):\n${lines(CONFIG_VARIABLES)}\n\nAlso read by serve:\n${lines(SERVE_RUNTIME)}`;
}

function lines(variables: readonly Variable[]): string {
  const width = Math.max(...variables.map((v) => v.name.length)) + 2;
  return variables.map((v) => `  ${v.name.padEnd(width)}${v.about}${v.default ? ` (default: ${v.default})` : ""}`).join("\n");
}
