import { loadConfig, type ResolvedConfig } from "../../config.ts";
import { ConfigError } from "../../../errors.ts";
import { fail, ok, warn, type Check } from "./check.ts";

/** The values .env.example ships with: they let serve start, but nothing real works with them. */
const PLACEHOLDERS: Record<string, string> = {
  CRM_CLIENT_ID: "000000000000000000000000-example",
  CRM_CLIENT_SECRET: "change-me",
};

/**
 * The configuration as serve would take it. Loaded with the "store" need, which
 * requires nothing, so that one missing value does not hide every other finding;
 * what serve requires is checked here, one line each. Undefined config: a value is
 * malformed and nothing further can be checked.
 */
export function checkConfig(env: Record<string, string | undefined>, checks: Check[]): ResolvedConfig | undefined {
  let config: ResolvedConfig;
  try {
    config = loadConfig(env, "store", (message) => checks.push(warn("config DATABASE_PATH", message)));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) checks.push(fail("config", `${problem}: fix it in the environment or the env file`));
    return undefined;
  }
  checks.push(...serveOnlyProblems(env), baseUrl(config), clientId(env), clientSecret(env));
  checks.push(
    config.sms.apiKey
      ? ok("config SMS_API_KEY", "set")
      : warn("config SMS_API_KEY", "not set: a location without a key of its own fails every SMS; set it, or give each location one (bridge config set ID --sms-api-key -)"),
    env.INBOUND_API_KEY?.trim()
      ? ok("config INBOUND_API_KEY", "set: the admin API is on")
      : warn("config INBOUND_API_KEY", "not set: the admin API is off (503); set one (openssl rand -hex 24) to use it"),
    config.crm.providerId
      ? ok("config CRM_PROVIDER_ID", `${config.crm.providerId}: replies are posted to HighLevel with it`)
      : warn("config CRM_PROVIDER_ID", "not set: every reply is refused (503); set it to the id of the app's conversation provider"),
    config.encryptionKey
      ? ok("config BRIDGE_ENCRYPTION_KEY", "set: tokens and API keys are encrypted at rest")
      : warn("config BRIDGE_ENCRYPTION_KEY", "not set: tokens and API keys are stored plain in the database and its backups; set one (openssl rand -hex 32) and restart serve"),
    config.allowedCompanyIds.length > 0
      ? ok("config ALLOWED_COMPANY_IDS", `${config.allowedCompanyIds.length} compan(ies) may install`)
      : warn("config ALLOWED_COMPANY_IDS", "not set: any HighLevel company may install; new locations wait for `bridge locations approve`"),
  );
  return config;
}

/** What serve alone reads (INBOUND_API_KEY, the webhook keys, proxies) and would refuse at start. */
function serveOnlyProblems(env: Record<string, string | undefined>): Check[] {
  try {
    loadConfig(env, "serve");
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems
      .filter((problem) => !problem.endsWith("required by this command but not set")) // one line each below
      .map((problem) => fail("config", `${problem}: serve would refuse to start`));
  }
}

function baseUrl(config: ResolvedConfig): Check {
  const name = "config BASE_URL";
  if (!config.baseUrl) return fail(name, "not set: serve needs this service's public address (the install and webhook URLs are made from it)");
  const host = new URL(config.baseUrl).hostname;
  if (host === "localhost" || host === "[::1]" || host.startsWith("127.")) {
    return warn(name, `${config.baseUrl}: HighLevel cannot reach this address; set the public https address of this server`);
  }
  return ok(name, config.baseUrl);
}

function clientId(env: Record<string, string | undefined>): Check {
  return required(env, "CRM_CLIENT_ID", (value) => value, "your HighLevel app's Client ID");
}

function clientSecret(env: Record<string, string | undefined>): Check {
  return required(env, "CRM_CLIENT_SECRET", () => "set", "your HighLevel app's Client Secret");
}

function required(env: Record<string, string | undefined>, name: string, shown: (value: string) => string, what: string): Check {
  const value = env[name]?.trim() ?? "";
  if (!value) return fail(`config ${name}`, `not set: serve needs ${what}`);
  if (value === PLACEHOLDERS[name]) return fail(`config ${name}`, `still the .env.example placeholder: set ${what}`);
  return ok(`config ${name}`, shown(value));
}
