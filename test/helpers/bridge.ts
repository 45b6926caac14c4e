import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { loadConfig } from "../../src/core/config.ts";
import { createCore, type Tuning } from "../../src/core/index.ts";
import { createLogger } from "../../src/core/log.ts";
import { createRun, type RunOptions } from "../../src/core/run.ts";
import { createApp } from "../../src/server/app.ts";
import type { InboundSink } from "../../src/core/inbound/reply.ts";
import { createBodyBudget } from "../../src/server/body.ts";
import { listen, type Timeouts } from "../../src/server/listen.ts";
import { COMPANY_ID, startFakeCrm } from "./fake-crm.ts";
import { startFakeGateway } from "./fake-gateway.ts";
import { captureStream } from "./stream.ts";
import { databaseEnv, openTestDatabase } from "./test-store.ts";

export const APP_ID = "0123456789abcdef01234567";
export const CLIENT_ID = `${APP_ID}-lq8x2k`;
export const CLIENT_SECRET = "client-secret-do-not-log";
export const ADMIN_KEY = "admin-key-do-not-log-0123456789";
export const GLOBAL_SMS_KEY = "global-sms-key-do-not-log-0123";

export interface BridgeOptions {
  env?: Record<string, string>;
  tuning?: Tuning;
  now?: () => number;
  /** Start the queue worker (default true). */
  worker?: RunOptions["worker"];
  /** Read the gateway keys' balances at start, as serve does (default true). */
  balances?: RunOptions["balances"];
  /**
   * Reconciliation's schedule; none by default: serve's first sync, a minute after start,
   * would mark uninstalled every location a slow test seeded but the fake CRM does not list
   * (sync.test.ts calls `core.installs.sync()` itself; e2e tests run serve's schedule).
   */
  sync?: RunOptions["sync"];
  /** How often alerts look (default serve's 30 s); tests call `core.alerts.look()` themselves. */
  alertEveryMs?: RunOptions["alertEveryMs"];
  /** The heartbeat's and the leader's renewal's period (default serve's 5 s). */
  beatMs?: RunOptions["beatMs"];
  /** The server's connection timeouts (default: serve's). */
  timeouts?: Timeouts;
  /** Where replies received by phones go (default: none, inbound not configured). */
  inbound?: InboundSink;
}

/**
 * What every test of a running bridge starts from: a temp directory, a fake CRM and a
 * fake gateway (real HTTP servers), a webhook signing key, and the environment that
 * points bridge at them.
 */
export async function startWorld(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `bridge-${name}-`));
  const crm = await startFakeCrm();
  const gateway = await startFakeGateway();
  const keys = generateKeyPairSync("ed25519");
  const env: Record<string, string> = {
    BASE_URL: "http://bridge.test",
    CRM_CLIENT_ID: CLIENT_ID,
    CRM_API_URL: crm.url,
    CRM_WEBHOOK_PUBLIC_KEY: keys.publicKey.export({ type: "spki", format: "pem" }).toString(),
    SMS_API_URL: gateway.url,
    DATABASE_PATH: join(dir, "bridge.db"),
  };
  return {
    dir,
    crm,
    gateway,
    keys,
    env,
    async close() {
      await crm.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The real bridge app on 127.0.0.1:0 with a temp SQLite file (or, with
 * BRIDGE_TEST_STORE=postgres, a PostgreSQL schema: test-store.ts), a fake CRM and a fake
 * gateway (real HTTP servers), and its own webhook signing key. Waits are shortened
 * through Tuning, never by mocking. Tests get theirs through bridgePerTest, which closes
 * it and removes its directory after the test.
 */
async function startTestBridge(options: BridgeOptions = {}) {
  const world = await startWorld("test");
  const { dir, crm, gateway, keys } = world;
  const env: Record<string, string> = {
    ...world.env,
    CRM_CLIENT_SECRET: CLIENT_SECRET,
    CRM_MARKETPLACE_URL: "http://marketplace.test",
    SMS_API_KEY: GLOBAL_SMS_KEY,
    INBOUND_API_KEY: ADMIN_KEY,
    // The fake CRM's company: its installs are approved to use the global key.
    ALLOWED_COMPANY_IDS: COMPANY_ID,
    LOG_LEVEL: "debug",
    ...options.env,
  };
  Object.assign(env, await databaseEnv(env));
  const config = loadConfig(env, "serve");
  const logs: string[] = [];
  const log = createLogger(config.logLevel, captureStream(logs));
  const database = await openTestDatabase(config, log);
  const now = options.now ?? Date.now;
  const core = createCore(config, database.source, log, now, {
    crm: { retryDelayMs: 10 },
    sms: { retryDelayMs: 10 },
    reportBackoffMs: 20,
    bulkPaceMs: 0,
    tokenStoreRetryMs: 10,
    receiptPollMs: 10,
    holdProbeMs: 100,
    receiptBookMs: 20,
    ...options.tuning,
  });
  // serve's running parts, through serve's own function; only the worker looks more often.
  const run = createRun(core, { pollMs: 20, worker: options.worker, balances: options.balances, sync: options.sync ?? false, alertEveryMs: options.alertEveryMs, beatMs: options.beatMs });
  const { worker } = run;
  const unhandled: unknown[] = [];
  const bodyBudget = createBodyBudget();
  const app = createApp({ core, worker, bodyBudget, inbound: options.inbound, onUnhandled: (error) => unhandled.push(error) });
  const server = await listen(app, "127.0.0.1", 0, options.timeouts);
  await run.start();
  const url = server.url;
  let closing: Promise<void> | undefined;

  const bridge = {
    url,
    dir,
    env,
    config,
    core,
    worker,
    /** This server among the others on the database (src/core/servers.ts). */
    presence: run.presence,
    crm,
    gateway,
    logs,
    unhandled,
    /** The shared budget of unsigned webhook bodies: `used` is what is leased now. */
    bodyBudget,
    signingKey: keys.privateKey,
    fetch: (path: string, init?: RequestInit) => fetch(url + path, init),
    /** POSTs a webhook signed with the configured key (or as told). */
    webhook(body: unknown, opts: { key?: KeyObject | null; header?: string; raw?: string } = {}) {
      const raw = opts.raw ?? JSON.stringify(body);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (opts.key !== null) headers[opts.header ?? "x-ghl-signature"] = signBody(raw, opts.key ?? keys.privateKey);
      return fetch(`${url}/webhooks/crm`, { method: "POST", headers, body: raw });
    },
    admin(path: string, init: RequestInit = {}) {
      const headers = { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json", ...init.headers };
      return fetch(url + path, { ...init, headers });
    },
    /** Installs a location through the real OAuth callback. */
    async install(locationId: string) {
      crm.grantLocation(`code-${locationId}`, locationId);
      const res = await fetch(`${url}/oauth-callback?code=code-${locationId}`);
      expect(res.status).toBe(200);
    },
    /** Stores a token record directly, e.g. one about to expire. */
    async seed(locationId: string, fields: { expiresAt?: number; refreshToken?: string } = {}) {
      const refreshToken = fields.refreshToken ?? `rt-seed-${locationId}`;
      crm.refreshTokens.set(refreshToken, locationId);
      await core.tokens.save(
        {
          locationId,
          companyId: "company-1",
          accessToken: `at-seed-${locationId}`,
          refreshToken,
          expiresAt: fields.expiresAt ?? now() + 86_400_000,
        },
        now(),
        true,
      );
    },
    /**
     * Stops the worker and the server, closes the database and the fakes, and fails if
     * any request reached the server's error hook unhandled. Closing again does nothing
     * more. The directory (and so the database file) stays until the test is over: a
     * bridge started after this one may open the same file (env DATABASE_PATH).
     */
    close() {
      closing ??= (async () => {
        await run.stop(1000);
        server.server.closeAllConnections();
        await server.close();
        await database.close();
        await crm.close();
        await gateway.close();
        expect(unhandled, "errors reached the server's error hook unhandled").toEqual([]);
      })();
      return closing;
    },
  };
  return bridge;
}

export type Bridge = Awaited<ReturnType<typeof startTestBridge>>;

/**
 * How every test starts a bridge: call it once in a file or describe, and each test
 * calls the function it returns, `start(options, ...locations)`, as often as it needs
 * (a second bridge, or one restarted on the first one's DATABASE_PATH). Each start
 * seeds `locations`. After each test, whether it passed or not, every bridge started
 * in it is closed, the last started first, and their directories are removed; a bridge
 * the test closed itself is not closed again.
 */
export function bridgePerTest() {
  const started: Bridge[] = [];
  afterEach(async () => {
    const bridges = started.splice(0).reverse();
    const failures: unknown[] = [];
    for (const bridge of bridges) await bridge.close().catch((error: unknown) => failures.push(error));
    for (const bridge of bridges) rmSync(bridge.dir, { recursive: true, force: true });
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} bridges failed to close cleanly`);
  });
  return async (options: BridgeOptions = {}, ...locations: string[]): Promise<Bridge> => {
    const bridge = await startTestBridge(options);
    started.push(bridge);
    for (const locationId of locations) await bridge.seed(locationId);
    return bridge;
  };
}

/** A ProviderOutboundMessage webhook body. */
export function outbound(messageId: string, fields: Record<string, unknown> = {}) {
  return {
    type: "SMS",
    locationId: "loc-1",
    messageId,
    contactId: "contact-1",
    phone: "+639171234567",
    message: `hello ${messageId}`,
    attachments: [],
    userId: "user-1",
    ...fields,
  };
}

export function signBody(raw: string | Uint8Array, key: KeyObject): string {
  const algorithm = key.asymmetricKeyType === "ed25519" ? null : "sha256";
  return sign(algorithm, typeof raw === "string" ? Buffer.from(raw) : raw, key).toString("base64");
}

/** Polls until `check` returns (or settles to) a truthy value (or throws after `ms`). */
export async function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
