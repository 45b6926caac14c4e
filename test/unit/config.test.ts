import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { describe, expect, test } from "vitest";
import { describeConfig } from "../../src/core/config-describe.ts";
import { loadConfig, type ConfigNeed } from "../../src/core/config.ts";
import { ConfigError } from "../../src/errors.ts";

const CLIENT_ID = "0123456789abcdef01234567-mhq8v1x2";
const full = {
  BASE_URL: "https://bridge.example.com",
  CRM_CLIENT_ID: CLIENT_ID,
  CRM_CLIENT_SECRET: "client-secret-5f0e9a7c31d2",
};

const spki = (pair: { publicKey: KeyObject }) => pair.publicKey.export({ type: "spki", format: "pem" }).toString();
const edPem = () => spki(generateKeyPairSync("ed25519"));
const rsaPem = () => spki(generateKeyPairSync("rsa", { modulusLength: 2048 }));
const x25519Pem = () => spki(generateKeyPairSync("x25519"));
const ecPem = (namedCurve: string) => spki(generateKeyPairSync("ec", { namedCurve }));

/** The problems a failing load reports; [] when it loads. */
function problemsOf(env: Record<string, string | undefined>, need: ConfigNeed): string[] {
  try {
    loadConfig(env, need);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
}

const names = (text: string, variable: string) => new RegExp(`\\b${variable}\\b`).test(text);

type Config = ReturnType<typeof loadConfig>;

describe("defaults", () => {
  const config = loadConfig({}, "store");

  test.each<[string, (c: Config) => unknown, unknown]>([
    ["CRM_API_URL", (c) => c.crm.apiUrl, "https://services.leadconnectorhq.com"],
    ["CRM_MARKETPLACE_URL", (c) => c.crm.marketplaceUrl, "https://marketplace.gohighlevel.com"],
    ["SMS_API_URL", (c) => c.sms.apiUrl, "https://api.cast.ph"],
    ["DATABASE_PATH", (c) => c.databasePath, "./bridge.db"],
    ["HOST", (c) => c.host, "0.0.0.0"],
    ["PORT", (c) => c.port, 3000],
    ["LOG_LEVEL", (c) => c.logLevel, "info"],
    ["CRM_PROVIDER_ID", (c) => c.crm.providerId, ""],
    ["SMS_API_KEY", (c) => c.sms.apiKey, ""],
    ["SMS_SENDER_ID", (c) => c.sms.senderId, ""],
    ["INBOUND_API_KEY", (c) => c.inboundApiKeys.length, 0],
    ["LOG_FORMAT", (c) => c.logFormat, "text"],
    ["RETENTION_DAYS", (c) => c.retentionMs, 30 * 86_400_000],
    ["LOW_BALANCE_CREDITS", (c) => c.lowBalanceCredits, 500],
    ["METRICS_TOKEN", (c) => c.metricsToken, ""],
  ])("%s defaults", (_, pick, expected) => {
    expect(pick(config)).toBe(expected);
  });

  test("the default webhook keys are HighLevel's Ed25519 and RSA keys", () => {
    const keys = loadConfig(full, "serve").crm.webhookKeys;
    expect(keys.map((k) => k.asymmetricKeyType)).toEqual(["ed25519", "rsa"]);
  });
});

describe("values", () => {
  test.each([
    [CLIENT_ID, "0123456789abcdef01234567"],
    ["0123456789ABCDEF01234567-abc-def", "0123456789ABCDEF01234567"],
  ])("the appId of %s is %s", (clientId, appId) => {
    expect(loadConfig({ CRM_CLIENT_ID: clientId }, "store").crm.appId).toBe(appId);
  });

  test.each([
    ["https://bridge.example.com/", "https://bridge.example.com"],
    ["https://bridge.example.com//", "https://bridge.example.com"],
    ["https://bridge.example.com/sub/", "https://bridge.example.com/sub"],
    ["http://localhost:8080", "http://localhost:8080"],
    [" https://bridge.example.com ", "https://bridge.example.com"],
  ])("BASE_URL %j becomes %s", (input, baseUrl) => {
    expect(loadConfig({ ...full, BASE_URL: input }, "serve").baseUrl).toBe(baseUrl);
  });

  test.each<[string, string, (c: Config) => unknown, unknown]>([
    ["PORT", "", (c) => c.port, 3000],
    ["PORT", "  ", (c) => c.port, 3000],
    ["LOG_LEVEL", "", (c) => c.logLevel, "info"],
    ["CRM_API_URL", "", (c) => c.crm.apiUrl, "https://services.leadconnectorhq.com"],
    ["CRM_WEBHOOK_PUBLIC_KEY", "", (c) => c.crm.webhookKeys.length, 2],
    ["DATABASE_PATH", "", (c) => c.databasePath, "./bridge.db"],
  ])("an empty %s (%j) counts as unset", (name, value, pick, expected) => {
    expect(pick(loadConfig({ ...full, [name]: value }, "serve"))).toBe(expected);
  });

  test.each<[string, string, (c: Config) => unknown, unknown]>([
    ["PORT", "8080", (c) => c.port, 8080],
    ["TRUST_PROXY", "1", (c) => c.trustProxy, true],
    ["TRUST_PROXY", "no", (c) => c.trustProxy, false],
    ["PORT", "0", (c) => c.port, 0],
    ["LOG_LEVEL", "debug", (c) => c.logLevel, "debug"],
    ["HOST", "127.0.0.1", (c) => c.host, "127.0.0.1"],
    ["SMS_SENDER_ID", "MYSHOP", (c) => c.sms.senderId, "MYSHOP"],
    ["SMS_API_URL", "http://127.0.0.1:9999/", (c) => c.sms.apiUrl, "http://127.0.0.1:9999"],
  ])("%s=%s is taken", (name, value, pick, expected) => {
    expect(pick(loadConfig({ ...full, [name]: value }, "serve"))).toBe(expected);
  });

  test.each<[string | undefined, string[]]>([
    [undefined, ["127.0.0.1", "::1"]],
    ["", ["127.0.0.1", "::1"]],
    ["10.0.0.5", ["10.0.0.5"]],
    [" 10.0.0.0/8 , 2001:db8::/32,::ffff:192.0.2.1 ", ["10.0.0.0/8", "2001:db8::/32", "::ffff:192.0.2.1"]],
    ["0.0.0.0/0", ["0.0.0.0/0"]],
  ])("TRUSTED_PROXIES=%j gives %j", (value, proxies) => {
    expect(loadConfig({ ...full, TRUSTED_PROXIES: value }, "serve").trustedProxies).toEqual(proxies);
  });

  test("an empty required variable is reported as missing", () => {
    const problems = problemsOf({ ...full, BASE_URL: "" }, "serve");
    expect(problems).toHaveLength(1);
    expect(names(problems[0]!, "BASE_URL")).toBe(true);
  });
});

describe("each command requires only what it uses", () => {
  test.each<[ConfigNeed, string[]]>([
    ["store", []],
    ["install-url", ["BASE_URL", "CRM_CLIENT_ID"]],
    ["token", ["CRM_CLIENT_ID", "CRM_CLIENT_SECRET"]],
    ["serve", ["BASE_URL", "CRM_CLIENT_ID", "CRM_CLIENT_SECRET"]],
  ])("%s with nothing set misses exactly %j", (need, missing) => {
    const problems = problemsOf({}, need);
    expect(problems).toHaveLength(missing.length);
    for (const name of missing) expect(problems.filter((p) => names(p, name))).toHaveLength(1);
  });

  test.each<ConfigNeed>(["store", "install-url", "token", "serve"])("%s loads with BASE_URL, id and secret", (need) => {
    expect(problemsOf(full, need)).toEqual([]);
  });

  test.each<ConfigNeed>(["store", "install-url", "token"])("%s does not read TRUSTED_PROXIES, which only serve uses", (need) => {
    expect(loadConfig({ ...full, TRUSTED_PROXIES: "not an address" }, need).trustedProxies).toEqual([]);
  });

  test("install-url does not need the client secret", () => {
    const config = loadConfig({ BASE_URL: full.BASE_URL, CRM_CLIENT_ID: CLIENT_ID }, "install-url");
    expect(config.crm.clientSecret).toBe("");
  });
});

describe("a bad start lists every problem at once", () => {
  const env = { CRM_CLIENT_ID: "abc", PORT: "99999", BASE_URL: "not a url", LOG_LEVEL: "loud" };
  const problems = problemsOf(env, "serve");
  const variables = ["CRM_CLIENT_ID", "PORT", "BASE_URL", "LOG_LEVEL", "CRM_CLIENT_SECRET"];

  test("one problem per variable", () => {
    expect(problems).toHaveLength(variables.length);
  });

  test.each(variables)("%s is named by exactly one problem", (name) => {
    expect(problems.filter((p) => names(p, name))).toHaveLength(1);
  });

  test("the error message carries every problem", () => {
    let message = "";
    try {
      loadConfig(env, "serve");
    } catch (error) {
      message = (error as Error).message;
    }
    for (const name of variables) expect(names(message, name)).toBe(true);
  });

  test.each([
    ["PORT", "-1"],
    ["PORT", "80.5"],
    ["PORT", "http"],
    ["PORT", "65536"],
    ["BASE_URL", "http://"],
    ["BASE_URL", "mailto:ops@example.com"],
    ["BASE_URL", "https://bridge.example.com/app?x=1"],
    ["BASE_URL", "https://bridge.example.com/#top"],
    ["PORT", "0x10"],
    ["PORT", "1e3"],
    ["TRUST_PROXY", "maybe"],
    ["TRUSTED_PROXIES", "proxy.internal"],
    ["TRUSTED_PROXIES", "127.0.0.1,10.0.0.0/33"],
    ["TRUSTED_PROXIES", "2001:db8::/129"],
    ["TRUSTED_PROXIES", "10.0.0.0/8/8"],
    ["TRUSTED_PROXIES", "10.0.0.0/"],
    ["TRUSTED_PROXIES", "10.0.0.0/x"],
    ["TRUSTED_PROXIES", "10.0.0.1:8080"],
    ["TRUSTED_PROXIES", "fe80::1%eth0"],
    ["SMS_SENDER_ID", "TWENTY_ONE_CHARACTERS"],
    ["SMS_SENDER_ID", "BAD!<>"],
    ["SMS_SENDER_ID", "   x"],
    ["SMS_API_KEY", "key with spaces"],
    ["SMS_API_KEY", "ключ"],
    ["INBOUND_API_KEY", "clé-secrète-0123456789abcdef"], // a client sends UTF-8, the server reads latin1: never equal
    ["INBOUND_API_KEY", "admin key 0123456789abcdef"],
    ["INBOUND_API_KEY", "a"],
    ["INBOUND_API_KEY", "0123456789abcdef0123456"], // 23 characters
    ["INBOUND_API_KEY", "0123456789abcdef01234567,short"],
    ["INBOUND_API_KEY", "0123456789abcdef01234567,"],
    ["INBOUND_API_KEY", "0123456789abcdef01234567, 89abcdef0123456789abcdef"],
    ["INBOUND_API_KEY", "0123456789abcdef01234567,0123456789abcdef01234568,0123456789abcdef01234569"],
    ["LOG_LEVEL", "verbose"],
    ["BRIDGE_ENCRYPTION_KEY", "too-short"],
    ["CRM_API_URL", "ftp://example.com"],
    ["CRM_MARKETPLACE_URL", "marketplace"],
    ["SMS_API_URL", "not a url"],
    ["CRM_CLIENT_ID", "0123456789abcdef0123456-short"],
    ["CRM_CLIENT_ID", "0123456789abcdef01234567"],
    ["CRM_CLIENT_ID", "zzzzzzzzzzzzzzzzzzzzzzzz-abc"],
  ])("%s=%j is one problem naming it", (name, value) => {
    const found = problemsOf({ ...full, [name]: value }, "serve");
    expect(found).toHaveLength(1);
    expect(names(found[0]!, name)).toBe(true);
  });
});

describe("INBOUND_API_KEY", () => {
  const OLD = "old-admin-key-4b227777d4dd1fc6";
  const NEW = "new-admin-key-9f86d081884c7d65";

  test.each([
    [OLD, [OLD]],
    [`${OLD},${NEW}`, [OLD, NEW]],
  ])("%s gives the keys %j", (value, keys) => {
    expect(loadConfig({ ...full, INBOUND_API_KEY: value }, "serve").inboundApiKeys).toEqual(keys);
  });

  test("a short key is refused, saying how to make one and not what it was", () => {
    const [problem] = problemsOf({ ...full, INBOUND_API_KEY: `${OLD},short-secret` }, "serve");
    expect(problem).toMatch(/^INBOUND_API_KEY: .*at least 24 characters.*openssl rand -hex 24/);
    expect(problem).not.toContain("short-secret");
  });

  test("describeConfig says two keys are set, and shows neither", () => {
    const described = JSON.stringify(describeConfig(loadConfig({ ...full, INBOUND_API_KEY: `${OLD},${NEW}` }, "serve")));
    expect(described).toContain("2 keys");
    for (const key of [OLD, NEW]) expect(described).not.toContain(key.slice(0, 12));
  });

  test.each<ConfigNeed>(["store", "install-url", "token"])("%s, which serves no admin API, does not read it", (need) => {
    const config = loadConfig({ ...full, INBOUND_API_KEY: "short" }, need);
    expect(config.inboundApiKeys).toEqual([]);
  });
});

describe("CRM_WEBHOOK_PUBLIC_KEY", () => {
  test("a PEM written with literal \\n sequences parses", () => {
    const oneLine = edPem().trim().replace(/\n/g, "\\n");
    expect(oneLine).not.toContain("\n");
    const keys = loadConfig({ ...full, CRM_WEBHOOK_PUBLIC_KEY: oneLine }, "serve").crm.webhookKeys;
    expect(keys.map((k) => k.asymmetricKeyType)).toEqual(["ed25519"]);
  });

  test("several PEM blocks give several keys", () => {
    const text = [edPem(), ecPem("prime256v1"), rsaPem()].join("\n");
    const keys = loadConfig({ ...full, CRM_WEBHOOK_PUBLIC_KEY: text }, "serve").crm.webhookKeys;
    expect(keys.map((k) => k.asymmetricKeyType)).toEqual(["ed25519", "ec", "rsa"]);
  });

  test.each([
    ["garbage inside a PEM block", "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----"],
    ["no PEM block at all", "not a key"],
    ["an EC key on secp384r1", ecPem("secp384r1")],
    ["an x25519 key (cannot sign)", x25519Pem()],
    ["a good key followed by garbage", `${edPem()}\n-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----`],
  ])("%s is a problem naming the variable", (_, value) => {
    const problems = problemsOf({ ...full, CRM_WEBHOOK_PUBLIC_KEY: value }, "serve");
    expect(problems).toHaveLength(1);
    expect(names(problems[0]!, "CRM_WEBHOOK_PUBLIC_KEY")).toBe(true);
  });

  test.each<ConfigNeed>(["store", "install-url", "token"])("%s, which verifies no webhooks, does not read it", (need) => {
    const config = loadConfig({ ...full, CRM_WEBHOOK_PUBLIC_KEY: "not a key" }, need);
    expect(config.crm.webhookKeys).toEqual([]);
  });

  test("a key problem is reported together with other problems", () => {
    const problems = problemsOf({ ...full, CRM_WEBHOOK_PUBLIC_KEY: "not a key", CRM_CLIENT_SECRET: undefined }, "serve");
    expect(problems.filter((p) => names(p, "CRM_WEBHOOK_PUBLIC_KEY"))).toHaveLength(1);
    expect(problems.filter((p) => names(p, "CRM_CLIENT_SECRET"))).toHaveLength(1);
  });
});

describe("describeConfig", () => {
  const secrets = {
    CRM_CLIENT_SECRET: "crm-secret-d41d8cd98f00b204",
    SMS_API_KEY: "sms-key-e9800998ecf8427e",
    INBOUND_API_KEY: "inbound-key-5eb63bbbe01eeed0",
    METRICS_TOKEN: "metrics-token-7d793037a0760186",
  };
  const described = JSON.stringify(describeConfig(loadConfig({ ...full, ...secrets }, "serve")));

  test.each(Object.entries(secrets))("does not contain the value of %s", (_, value) => {
    expect(described).not.toContain(value);
    expect(described).not.toContain(value.slice(0, 12));
  });

  test.each(Object.keys(secrets))("still says whether %s is set", (name) => {
    expect(described).toContain(name);
  });

  test("shows non-secret values as they are", () => {
    const shown = describeConfig(loadConfig({ ...full, ...secrets }, "serve"));
    expect(shown).toMatchObject({ BASE_URL: full.BASE_URL, CRM_CLIENT_ID: CLIENT_ID, PORT: 3000, TRUSTED_PROXIES: "127.0.0.1,::1" });
  });
});

describe("operator's view settings", () => {
  test.each([
    ["LOG_FORMAT", "xml", "must be one of text, json"],
    ["RETENTION_DAYS", "0", "whole number from 1"],
    ["LOW_BALANCE_CREDITS", "-5", "whole number from 0"],
    ["METRICS_TOKEN", "short", "at least 24 characters"],
    ["METRICS_TOKEN", "has a space in it 0123456789", "printable ASCII"],
  ])("%s=%s is refused: %s", (name, value, says) => {
    const problems = problemsOf({ [name]: value }, "store");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(name);
    expect(problems[0]).toContain(says);
  });

  test("values are read", () => {
    const config = loadConfig({ LOG_FORMAT: "json", RETENTION_DAYS: "7", LOW_BALANCE_CREDITS: "0", METRICS_TOKEN: "m".repeat(24) }, "store");
    expect(config).toMatchObject({ logFormat: "json", retentionMs: 7 * 86_400_000, lowBalanceCredits: 0, metricsToken: "m".repeat(24) });
  });
});
