import type { KeyObject } from "node:crypto";
import { durationMs } from "./duration.ts";
import { ID_RULE, isId } from "./ids.ts";
import { parseEncryptionKey } from "../db/sealer.ts";
import { isTimeZone } from "../db/usage-month.ts";

// The kinds of value an environment variable holds: each turns the variable's text into
// what bridge uses, or throws Invalid saying what is wrong (completing "<VARIABLE>: …").
// Small functions rather than zod schemas: every command loads these, and the zod/mini
// equivalent, measured, makes every command start markedly slower (docs/PERFORMANCE.md).

/** Thrown by a kind: what is wrong with the value. */
export class Invalid extends Error {}

/** One kind of value: from the variable's text to what bridge uses. */
export type Kind<T> = (value: string) => T;

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

/** Long enough that guessing cannot pay, however many tries the throttle lets through. */
const BEARER_MIN = 24;
const BEARER_TOO_SHORT = `at least ${BEARER_MIN} characters; make one with \`openssl rand -hex 24\``;

export const text: Kind<string> = (value) => value;

/** Text obeying a rule. */
export function obeying(rule: Rule): Kind<string> {
  return (value) => {
    if (value.length > rule.maxLength) throw new Invalid(`must be at most ${rule.maxLength} characters`);
    if (!rule.pattern.test(value)) throw new Invalid(rule.says);
    return value;
  };
}

/** An IANA time zone the runtime knows (Asia/Manila, UTC, America/New_York). */
export const timeZone: Kind<string> = (value) => {
  if (!isTimeZone(value)) throw new Invalid("must be an IANA time zone, such as Asia/Manila or UTC");
  return value;
};

export function matching(pattern: RegExp, says: string): Kind<string> {
  return (value) => {
    if (!pattern.test(value)) throw new Invalid(says);
    return value;
  };
}

/** An http(s) base address: paths are appended to it, so no query or fragment, no trailing "/". */
export const httpUrl: Kind<string> = (value) => {
  const trimmed = value.trim();
  const url = URL.parse(trimmed);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) throw new Invalid("must be an http(s) URL");
  if (/[?#]/.test(trimmed)) throw new Invalid("must be an http(s) URL without a query or fragment");
  return trimmed.replace(/\/+$/, "");
};

/**
 * An incoming webhook's whole URL (ALERT_WEBHOOK_URL): https, as it carries a secret
 * in its path or query; http only to this machine (a relay beside bridge, a test's
 * receiver), like a phone's BASE_URL (docs/android.md).
 */
export const webhookUrl: Kind<string> = (value) => {
  const url = URL.parse(value.trim());
  if (!url || !url.hostname || (url.protocol !== "https:" && url.protocol !== "http:")) throw new Invalid("must be an https:// URL");
  if (url.protocol === "http:" && !isLoopback(url.hostname)) throw new Invalid("must be an https:// URL (http:// only to 127.0.0.1, ::1 or localhost)");
  return url.href;
};

/** PostgreSQL's sslmode values pg knows. */
const SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"];

/**
 * A PostgreSQL connection URL (DATABASE_URL): postgres:// or postgresql://, a host (or a
 * `host=` socket directory), a known `sslmode` if any. The password may be left out, for
 * PGPASSWORD or ~/.pgpass. What is wrong is said without the value: it may hold a password.
 */
export const postgresUrl: Kind<string> = (value) => {
  const trimmed = value.trim();
  const url = URL.parse(trimmed);
  if (!url || (url.protocol !== "postgres:" && url.protocol !== "postgresql:")) {
    throw new Invalid("must be a postgres:// or postgresql:// URL, such as postgres://bridge:PASSWORD@db.example.com:5432/bridge");
  }
  if (!url.hostname && !url.searchParams.get("host")) throw new Invalid("must name a host: postgres://USER@HOST:PORT/DATABASE");
  const sslmode = url.searchParams.get("sslmode");
  if (sslmode !== null && !SSL_MODES.includes(sslmode)) throw new Invalid(`sslmode must be one of ${SSL_MODES.join(", ")}`);
  return trimmed;
};

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

export function oneOf<T extends string>(allowed: readonly T[]): Kind<T> {
  return (value) => {
    const found = allowed.find((a) => a === value);
    if (found === undefined) throw new Invalid(`must be one of ${allowed.join(", ")}`);
    return found;
  };
}

export const yesNo: Kind<boolean> = (value) => {
  const v = value.trim().toLowerCase();
  if (["1", "true", "yes"].includes(v)) return true;
  if (["0", "false", "no"].includes(v)) return false;
  throw new Invalid("must be 1/true/yes or 0/false/no");
};

/** A whole number from `min` to `max`, written in digits. */
export function wholeNumber(min: number, max: number): Kind<number> {
  return number(/^\d+$/, `must be a whole number from ${min} to ${max}`, (n) => n >= min && n <= max);
}

export const port = number(/^\d+$/, "must be a port number (0-65535)", (n) => n <= 65535);

/** A rate per second: a positive number, fractions allowed (0.5 = one every 2 s). */
export const rate = number(/^\d+(\.\d+)?$/, "must be a number per second above 0 (at most 10000)", (n) => n > 0 && n <= 10_000);

function number(pattern: RegExp, says: string, within: (n: number) => boolean): Kind<number> {
  return (value) => {
    const n = Number(value.trim());
    if (!pattern.test(value.trim()) || !within(n)) throw new Invalid(says);
    return n;
  };
}

/** A duration such as `90s`, `30m`, `1h` or `2d`, in ms; with `zero`, also "0". */
export function duration({ zero = false } = {}): Kind<number> {
  return (value) => {
    const ms = zero && value.trim() === "0" ? 0 : durationMs(value);
    if (ms === undefined) throw new Invalid("must be a duration such as 90s, 30m, 1h or 2d");
    return ms;
  };
}

/** Comma-separated HighLevel ids; spaces around them are ignored, repeats dropped. */
export const idList: Kind<string[]> = (value) => {
  const ids = list(value);
  const bad = ids.find((id) => !isId(id));
  if (bad !== undefined) throw new Invalid(`each comma-separated id ${ID_RULE} (${JSON.stringify(bad.slice(0, 70))} is not)`);
  return [...new Set(ids)];
};

/** The admin API's bearer (INBOUND_API_KEY): one key, or two (old,new) while clients move to the new one. */
export const adminKeys: Kind<string[]> = (value) => {
  const keys = value.split(",");
  if (keys.length > 2) throw new Invalid("holds more than two keys (two, comma-separated, only during a rotation)");
  for (const key of keys) {
    obeying(API_KEY)(key);
    if (key.length < BEARER_MIN) throw new Invalid(`${keys.length > 1 ? "each key must be" : "must be"} ${BEARER_TOO_SHORT}`);
  }
  return keys;
};

/** A bearer like the admin key (METRICS_TOKEN), as long, so that it cannot be guessed either. */
export const bearer: Kind<string> = (value) => {
  obeying(API_KEY)(value);
  if (value.length < BEARER_MIN) throw new Invalid(`must be ${BEARER_TOO_SHORT}`);
  return value;
};

/** IP addresses or CIDR ranges, comma-separated. */
export const proxies: Kind<string[]> = (value) => {
  const { isIP } = process.getBuiltinModule("node:net"); // serve only: no node:net for the CLI
  const entries = list(value);
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
};

/** One IPv4 or IPv6 address, written as such (no host name, no range). */
export const ipAddress: Kind<string> = (value) => {
  const { isIP } = process.getBuiltinModule("node:net");
  const address = value.trim();
  if (!isIP(address)) throw new Invalid(`${JSON.stringify(address.slice(0, 60))} is not an IPv4 or IPv6 address (such as 203.0.113.7 or 2001:db8::7)`);
  return address;
};

/** 32 bytes, as 64 hex characters or base64. */
export const encryptionKey: Kind<Buffer> = (value) => {
  const key = parseEncryptionKey(value);
  if (!key) throw new Invalid("must be 32 bytes, as 64 hex characters or base64");
  return key;
};

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g;

/** Keys that sign webhooks: one or more PEM blocks; "\n" written literally (as env files often do) is accepted. */
export const webhookKeys: Kind<KeyObject[]> = (value) => {
  const blocks = value.replace(/\\n/g, "\n").match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) throw new Invalid("no PEM public key found");
  const { createPublicKey } = process.getBuiltinModule("node:crypto"); // serve only: no node:crypto for the CLI
  return blocks.map((pem, i) => {
    let key: KeyObject;
    try {
      key = createPublicKey(pem);
    } catch {
      throw new Invalid(`key ${i + 1} is not a valid PEM public key`);
    }
    const type = key.asymmetricKeyType;
    if (type !== "ed25519" && type !== "ec" && type !== "rsa") throw new Invalid(`key ${i + 1} is ${type}, expected Ed25519, EC P-256 or RSA`);
    if (type === "ec" && key.asymmetricKeyDetails?.namedCurve !== "prime256v1") throw new Invalid(`key ${i + 1} is not on curve P-256`);
    return key;
  });
};

function list(value: string): string[] {
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}
