import { afterEach, describe, expect, test } from "vitest";
import { createCore } from "../../src/core/index.ts";
import { createLogger } from "../../src/core/log.ts";
import { openDb } from "../../src/db/index.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { CLIENT_ID, CLIENT_SECRET, bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { jsonResponse } from "../helpers/http.ts";
import { openTestDatabase, sqliteOnly } from "../helpers/test-store.ts";

const MINUTE = 60_000;
/** The fake CRM's expires_in for every token it issues. */
const EXPIRES_IN_S = 86_399;
/**
 * The injected clock sits a year in the past: expiry math done on wall time instead
 * of `now()` would see every record as long expired and refresh where it must not.
 */
const clock = Date.parse("2024-06-01T08:00:00Z");
/** What the bridge's `now()` answers; a test may move it forward. */
let current = clock;

/** Databases a test opened beside its bridge's: a second process's, or SQLite in memory. */
const extraDbs: { close(): unknown }[] = [];

const startWith = bridgePerTest();
// The clock stands still here, so no receipt would ever come due: report on acceptance.
const start = (options: BridgeOptions = {}) => startWith({ now: () => current, ...options, env: { DLR_WAIT: "0", ...options.env } });

afterEach(async () => {
  for (const db of extraDbs.splice(0)) await db.close();
  current = clock;
});

function tokenCalls(b: Bridge) {
  return b.crm.received("POST /oauth/token").map((r) => Object.fromEntries(new URLSearchParams(r.body)));
}

/** A second "process" on the same database file: its own connection, core and token service. */
/** Another process on the bridge's database (SQLite's file or PostgreSQL's schema), as a CLI command is. */
async function secondProcess(b: Bridge) {
  const log = createLogger("silent");
  const db = await openTestDatabase(b.config, log);
  extraDbs.push(db);
  return createCore(b.config, db.source, log, () => current);
}

describe("expiry threshold (refresh when less than 5 minutes remain)", () => {
  test.each([
    { left: "4 min", expiresAt: clock + 4 * MINUTE, refreshed: true },
    { left: "5 min minus 1 ms", expiresAt: clock + 5 * MINUTE - 1, refreshed: true },
    { left: "already expired", expiresAt: clock - 10 * MINUTE, refreshed: true },
    { left: "exactly 5 min", expiresAt: clock + 5 * MINUTE, refreshed: false },
    { left: "6 min", expiresAt: clock + 6 * MINUTE, refreshed: false },
  ])("$left left: refreshed = $refreshed", async ({ expiresAt, refreshed }) => {
    const b = await start();
    await b.seed("loc-1", { expiresAt, refreshToken: "rt-old" });

    const record = await b.core.installs.tokenService.validToken("loc-1");

    const stored = await b.core.tokens.get("loc-1");
    expect(record).toEqual(stored);
    if (!refreshed) {
      expect(tokenCalls(b)).toEqual([]);
      expect(stored).toMatchObject({ accessToken: "at-seed-loc-1", refreshToken: "rt-old", expiresAt });
      return;
    }
    expect(tokenCalls(b)).toEqual([
      expect.objectContaining({
        grant_type: "refresh_token",
        refresh_token: "rt-old",
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
      }),
    ]);
    expect(b.crm.received("POST /oauth/token")[0]?.headers["content-type"]).toMatch(/^application\/x-www-form-urlencoded/);
    expect(stored).toMatchObject({
      accessToken: "at-loc-1-1",
      refreshToken: "rt-loc-1-1",
      expiresAt: clock + EXPIRES_IN_S * 1000,
      updatedAt: clock,
      refreshError: "",
    });
  });
});

describe("refresh errors carry the spec's texts", () => {
  test("no record: no token for location: <id>", async () => {
    const b = await start();
    await expect(b.core.installs.tokenService.validToken("loc-missing")).rejects.toMatchObject({
      message: "no token for location: loc-missing",
    });
    expect(tokenCalls(b)).toEqual([]);
  });

  test("token endpoint 500: refresh token failed: token endpoint returned 500: <body>", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    b.crm.on("POST /oauth/token", () => new Response("upstream exploded", { status: 500 }));

    await expect(b.core.installs.tokenService.validToken("loc-1")).rejects.toMatchObject({
      message: "refresh token failed: token endpoint returned 500: upstream exploded",
    });
    // A 5xx is transient: the record keeps its pair and is not marked for reinstall.
    expect(await b.core.tokens.get("loc-1")).toMatchObject({ accessToken: "at-seed-loc-1", refreshError: "" });
  });

  test("unparseable 200: refresh token failed: failed to parse token response: <cause>", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    b.crm.on("POST /oauth/token", () => new Response("<html>not json", { status: 200 }));

    const error = await b.core.installs.tokenService.validToken("loc-1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/^refresh token failed: failed to parse token response: \S/);
    expect((await b.core.tokens.get("loc-1"))?.accessToken).toBe("at-seed-loc-1");
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("store failure: failed to update token in store: <cause>", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    // A real SQLite failure on exactly the write that stores the refreshed pair.
    b.core.db.exec(`CREATE TRIGGER fail_token_update BEFORE UPDATE ON tokens
      WHEN NEW.access_token <> OLD.access_token BEGIN SELECT RAISE(ABORT, 'disk full'); END`);

    await expect(b.core.installs.tokenService.validToken("loc-1")).rejects.toMatchObject({
      message: "failed to update token in store: disk full",
    });
    expect(tokenCalls(b)).toHaveLength(1);
    expect(await b.core.tokens.get("loc-1")).toMatchObject({ accessToken: "at-seed-loc-1", refreshToken: "rt-seed-loc-1" });
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("a store failure that passes: the refreshed pair (the old one is spent) is stored on a later try", async () => {
    const b = await start({ tuning: { tokenStoreRetryMs: 200 } }); // tries for 3 s: time to drop the trigger
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    b.core.db.exec(`CREATE TRIGGER fail_token_update BEFORE UPDATE ON tokens
      WHEN NEW.access_token <> OLD.access_token BEGIN SELECT RAISE(ABORT, 'database is locked'); END`);
    const refreshing = b.core.installs.tokenService.validToken("loc-1");
    await waitFor(() => b.logs.some((line) => line.includes("the refreshed token could not be stored")));
    b.core.db.exec("DROP TRIGGER fail_token_update");

    const record = await refreshing;
    expect(tokenCalls(b)).toHaveLength(1);
    expect(record.accessToken).not.toBe("at-seed-loc-1");
    expect(await b.core.tokens.get("loc-1")).toMatchObject({ accessToken: record.accessToken, refreshToken: record.refreshToken, refreshError: "" });
  });
});

describe("single-flight refresh (refresh tokens are single-use)", () => {
  test("20 webhooks at once for a token expiring in 1 minute: ONE token call, 20 SMS, 20 reports with the new token", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });

    const ids = Array.from({ length: 20 }, (_, i) => `m-${i}`);
    const answers = await Promise.all(ids.map((id) => b.webhook(outbound(id))));
    expect(answers.map((r) => r.status)).toEqual(ids.map(() => 200));

    const reports = await waitFor(() => b.crm.statusReports().length >= 20 && b.crm.statusReports());
    await waitFor(async () => (await Promise.all(ids.map((id) => b.core.jobs.get(id)))).every((found) => found?.state === "done"));

    expect(tokenCalls(b)).toHaveLength(1);
    const stored = await b.core.tokens.get("loc-1");
    expect(stored?.accessToken).not.toBe("at-seed-loc-1");
    expect(stored?.expiresAt).toBe(clock + EXPIRES_IN_S * 1000);
    expect(b.gateway.sent()).toHaveLength(20);
    expect(reports).toHaveLength(20);
    expect(reports.map((r) => r.messageId).sort()).toEqual([...ids].sort());
    for (const report of reports) {
      expect(report).toMatchObject({ authorization: `Bearer ${stored?.accessToken}`, body: { status: "delivered" } });
    }
  });

  test("20 concurrent validToken calls share one refresh", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });

    const records = await Promise.all(Array.from({ length: 20 }, () => b.core.installs.tokenService.validToken("loc-1")));

    expect(tokenCalls(b)).toHaveLength(1);
    expect(new Set(records.map((r) => r.accessToken))).toEqual(new Set(["at-loc-1-1"]));
    expect(new Set(records.map((r) => r.refreshToken))).toEqual(new Set(["rt-loc-1-1"]));
  });

  test("two processes on one database refreshing at once: ONE token call, both get the same new pair", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    const other = await secondProcess(b);

    const [mine, theirs] = await Promise.all([
      b.core.installs.tokenService.validToken("loc-1"),
      other.installs.tokenService.validToken("loc-1"),
    ]);

    expect(tokenCalls(b)).toHaveLength(1);
    expect(mine.accessToken).not.toBe("at-seed-loc-1");
    expect({ at: theirs.accessToken, rt: theirs.refreshToken }).toEqual({ at: mine.accessToken, rt: mine.refreshToken });
    expect(await b.core.tokens.get("loc-1")).toMatchObject({ accessToken: mine.accessToken, refreshToken: mine.refreshToken });
  });

  test("a report's refresh does not wait for another process's lease: it looks again shortly, holding no worker", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE });
    const other = await secondProcess(b);
    // Another process (`bridge token refresh`, waiting out HighLevel's 429) holds the lease.
    expect(await other.tokens.tryLease("loc-1", (await b.core.tokens.get("loc-1"))!.serial, Date.now(), Date.now() + MINUTE)).toBe(true);

    await expect(b.core.installs.tokenService.forJob("loc-1")).resolves.toEqual({ waitMs: expect.any(Number) });
    expect(tokenCalls(b)).toEqual([]);

    // The other process stores its pair: the next look uses it.
    await other.tokens.updateTokens("loc-1", "at-other", "rt-other", clock + EXPIRES_IN_S * 1000, clock);
    await expect(b.core.installs.tokenService.forJob("loc-1")).resolves.toMatchObject({ accessToken: "at-other", refreshToken: "rt-other" });
    expect(tokenCalls(b)).toEqual([]);
  });

  test("invalid_grant because another process rotated the token first: the newer pair is used, not an error", async () => {
    const b = await start();
    await b.seed("loc-1", { expiresAt: clock + MINUTE, refreshToken: "rt-old" });
    const otherStore = (await secondProcess(b)).tokens;
    const newerExpiry = clock + 2 * 3_600_000;
    b.crm.on("POST /oauth/token", async (req) => {
      const used = new URLSearchParams(req.body).get("refresh_token");
      if (used === "rt-old") {
        // The other process spent rt-old a moment before us and stored its new pair.
        await otherStore.updateTokens("loc-1", "at-other", "rt-other", newerExpiry, clock);
        return jsonResponse({ error: "invalid_grant", error_description: "Invalid refresh token" }, 400);
      }
      if (used === "rt-other") {
        return jsonResponse({ access_token: "at-next", refresh_token: "rt-next", expires_in: 3600, locationId: "loc-1" });
      }
      return jsonResponse({ error: "invalid_grant" }, 400);
    });

    const record = await b.core.installs.tokenService.validToken("loc-1");

    expect(record).toMatchObject({ accessToken: "at-other", refreshToken: "rt-other", expiresAt: newerExpiry });
    // Losing the race is not a dead grant: the newer pair must stay refreshable.
    expect.soft((await b.core.tokens.get("loc-1"))?.refreshError).toBe("");

    // And when the newer pair itself nears expiry it is refreshed normally.
    current = newerExpiry - MINUTE;
    await expect(b.core.installs.tokenService.validToken("loc-1")).resolves.toMatchObject({ accessToken: "at-next", refreshToken: "rt-next" });
    expect(tokenCalls(b).map((f) => f.refresh_token)).toEqual(["rt-old", "rt-other"]);
  });
});

describe("a dead refresh token", () => {
  test("invalid_grant with the store unchanged: refresh fails, the record asks for a reinstall, other locations go on", async () => {
    // Wall clock here: the worker schedules report retries on the injected clock.
    const b = await start({ now: Date.now, tuning: { reportAttempts: 3 } });
    await b.seed("loc-dead", { expiresAt: Date.now() + MINUTE, refreshToken: "rt-dead" });
    b.crm.refreshTokens.delete("rt-dead"); // the CRM no longer knows it: 400 invalid_grant
    await b.seed("loc-ok");

    const answers = await Promise.all([
      b.webhook(outbound("m-dead", { locationId: "loc-dead" })),
      b.webhook(outbound("m-ok", { locationId: "loc-ok" })),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);

    await waitFor(async () => (await b.core.jobs.get("m-ok"))?.state === "done");
    expect(b.crm.statusReports()).toEqual([
      expect.objectContaining({ messageId: "m-ok", authorization: "Bearer at-seed-loc-ok", body: { status: "delivered" } }),
    ]);
    await waitFor(async () => (await b.core.jobs.get("m-dead"))?.state === "dead");
    expect(b.crm.statusReports().filter((r) => r.messageId === "m-dead")).toEqual([]);

    const error = await b.core.installs.tokenService.validToken("loc-dead").catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^refresh token failed: .*invalid_grant/);
    const record = await b.core.tokens.get("loc-dead");
    expect(record).toMatchObject({ accessToken: "at-seed-loc-dead", refreshToken: "rt-dead" });
    expect(record?.refreshError).toMatch(/reinstall/);
    // The refused token is not presented again and again.
    expect(tokenCalls(b).map((f) => f.refresh_token)).toEqual(["rt-dead"]);

    // Unless an operator forces it (`token refresh --force`): the refusal may have been
    // a wrong CRM_CLIENT_SECRET, since mended. Once it works the mark is gone.
    b.crm.refreshTokens.set("rt-dead", "loc-dead");
    await expect(b.core.installs.tokenService.refresh("loc-dead")).rejects.toThrow(/reinstall/);
    expect(await b.core.installs.tokenService.refresh("loc-dead", true)).toMatchObject({ refreshError: "" });
    expect(tokenCalls(b).map((f) => f.refresh_token)).toEqual(["rt-dead", "rt-dead"]);
  });
});

describe("listings", () => {
  test("times are written exactly as Date.prototype.toISOString writes them, to the millisecond", () => {
    const db = openDb(":memory:");
    extraDbs.push(db);
    const tokens = createLocationRegistry(db);
    // Millisecond edges, odd fractions, leap day, far future: where a float conversion would round wrong.
    const times = [0, 1, 999, 1_000, 1_001, 86_399_999, Date.parse("2024-02-29T23:59:59.999Z"), 1_700_000_000_123, 4_102_444_800_000 - 1];
    for (let i = 0; i < 500; i++) times.push(Math.floor(Math.random() * 4_102_444_800_000));
    times.forEach((ms, i) => tokens.save({ locationId: `loc-${String(i).padStart(4, "0")}`, companyId: "c", accessToken: "a", refreshToken: "r", expiresAt: ms }, ms + 7));

    const listings = tokens.listings();
    expect(listings).toHaveLength(times.length);
    listings.forEach((listing, i) => {
      const ms = times[i] as number;
      expect([listing.expiresAt, listing.installedAt, listing.updatedAt]).toEqual([iso(ms), iso(ms + 7), iso(ms + 7)]);
    });
  });

  test("show everything but the tokens", () => {
    const db = openDb(":memory:");
    extraDbs.push(db);
    const tokens = createLocationRegistry(db);
    tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "at-secret", refreshToken: "rt-secret", expiresAt: 5_000 }, 1_000);
    tokens.setConfig("loc-1", { senderId: "BRIDGE", smsApiKey: "sms-key" }, 2_000);
    expect(tokens.listings()).toEqual([
      {
        locationId: "loc-1",
        name: "",
        companyId: "co-1",
        senderId: "BRIDGE",
        smsApiKey: "sms-key",
        smsApiKeyError: "",
        expiresAt: iso(5_000),
        installedAt: iso(1_000),
        updatedAt: iso(2_000),
        refreshError: "",
        approved: false,
        approvedBy: "",
        uninstalledAt: null,
      },
    ]);
  });
});

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
