import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, test } from "vitest";
import { createCore } from "../../src/core/index.ts";
import { createLogger } from "../../src/core/log.ts";
import { APP_ID, CLIENT_ID, bridgePerTest, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { COMPANY_ID, fieldsOf } from "../helpers/fake-crm.ts";
import { jsonResponse } from "../helpers/http.ts";
import { openTestDatabase, sqliteOnly } from "../helpers/test-store.ts";

/**
 * Agencies' own tokens (docs/operations.md, "Agencies: what you do once, and what happens by itself after"):
 * kept after the install, refreshed single-flight.
 */

const MINUTE = 60_000;
let clock = Date.parse("2030-03-01T08:00:00Z");
/** Databases a test opened beside its bridge's, as a CLI process does. */
const extraDbs: { close(): Promise<void> }[] = [];

const startWith = bridgePerTest();
const start = (options: BridgeOptions = {}) => startWith({ now: () => clock, ...options });

afterEach(async () => {
  for (const db of extraDbs.splice(0)) await db.close();
  clock = Date.parse("2030-03-01T08:00:00Z");
});

async function agencyInstall(b: Bridge, installedLocations = ["a", "b"]) {
  const granted = b.crm.grantCompany("code-co", { installedLocations });
  const res = await b.fetch("/oauth-callback?code=code-co");
  return { granted, status: res.status, body: await res.text() };
}

function companyRefreshCalls(b: Bridge) {
  return b.crm
    .received("POST /oauth/token")
    .map((r) => Object.fromEntries(new URLSearchParams(r.body)))
    .filter((form) => form.grant_type === "refresh_token");
}

describe("an agency install keeps the company's token", () => {
  sqliteOnly("reads the sealed columns with core.db")("stored once per company, sealed on disk bound to the companies table", async () => {
    const b = await start({ env: { BRIDGE_ENCRYPTION_KEY: randomBytes(32).toString("hex") } });
    const { granted, status } = await agencyInstall(b);
    expect(status).toBe(200);

    expect(await b.core.companies.ids()).toEqual([COMPANY_ID]);
    expect(await b.core.companies.get(COMPANY_ID)).toMatchObject({
      accessToken: granted.access_token,
      refreshToken: granted.refresh_token,
      expiresAt: clock + 86_399_000,
    });
    const raw = b.core.db.prepare("SELECT access_token, refresh_token FROM companies").get() as Record<string, string>;
    expect(raw.access_token).toMatch(/^enc:v2:/);
    expect(raw.refresh_token).toMatch(/^enc:v2:/);
    expect(JSON.stringify(raw)).not.toContain(granted.refresh_token);

    // Installing again from the agency replaces the token: still one row.
    const again = await agencyInstall(b);
    expect(await b.core.companies.ids()).toEqual([COMPANY_ID]);
    expect((await b.core.companies.get(COMPANY_ID))?.refreshToken).toBe(again.granted.refresh_token);
  });

  test("an outsider's agency install stores no company token", async () => {
    const b = await start({ env: { ALLOWED_COMPANY_IDS: "someoneElse" } });
    expect((await agencyInstall(b)).status).toBe(403);
    expect(await b.core.companies.ids()).toEqual([]);
  });

  test("the page names each location that failed, and why, escaped", async () => {
    const b = await start();
    b.crm.on("POST /oauth/locationToken", (req) => {
      const { locationId } = fieldsOf(req) as { locationId: string };
      if (locationId === "b") return jsonResponse({ message: "<script>alert(1)</script> not allowed" }, 403);
      return jsonResponse({ access_token: "at", refresh_token: "rt", expires_in: 3600, locationId, companyId: COMPANY_ID });
    });
    const { status, body } = await agencyInstall(b, ["a", "b", "c"]);
    expect(status).toBe(200);
    expect(body).toContain("connected to 2 location(s) of 3");
    expect(body).toContain("1 location(s) could not be connected");
    expect(body).toMatch(/<li><code>b<\/code>: locationToken endpoint returned 403: .*&#60;script&#62;alert\(1\)&#60;\/script&#62; not allowed/);
    expect(body).not.toContain("<script>");
    expect(body).toContain("bridge locations sync");
  });
});

describe("company token refresh", () => {
  test("asks for user_type=Company and stores the new pair", async () => {
    const b = await start();
    const { granted } = await agencyInstall(b);
    clock += 86_399_000 - MINUTE; // a minute before it expires

    const record = await b.core.installs.companyTokens.validToken(COMPANY_ID);

    expect(companyRefreshCalls(b)).toEqual([
      expect.objectContaining({ client_id: CLIENT_ID, user_type: "Company", refresh_token: granted.refresh_token }),
    ]);
    expect(record.refreshToken).not.toBe(granted.refresh_token);
    expect(await b.core.companies.get(COMPANY_ID)).toMatchObject({ accessToken: record.accessToken, expiresAt: clock + 86_399_000 });
  });

  test("the server and a CLI process refreshing at once: ONE token call, both get the same new pair", async () => {
    const b = await start();
    await agencyInstall(b);
    clock += 86_399_000 - MINUTE;
    const log = createLogger("silent");
    const db = await openTestDatabase(b.config, log);
    extraDbs.push(db);
    const cli = createCore(b.config, db.source, log, () => clock);

    const [mine, theirs] = await Promise.all([
      b.core.installs.companyTokens.validToken(COMPANY_ID),
      cli.installs.companyTokens.validToken(COMPANY_ID),
      b.core.installs.companyTokens.validToken(COMPANY_ID),
    ]);

    expect(companyRefreshCalls(b)).toHaveLength(1);
    expect({ at: theirs.accessToken, rt: theirs.refreshToken }).toEqual({ at: mine.accessToken, rt: mine.refreshToken });
  });

  test("a refresh token HighLevel refuses is noted: the company needs an install from the agency", async () => {
    const b = await start();
    await agencyInstall(b);
    b.crm.uninstallCompany();
    clock += 86_399_000;

    await expect(b.core.installs.companyTokens.validToken(COMPANY_ID)).rejects.toThrow(/refresh token failed: token endpoint returned 400/);
    expect((await b.core.companies.get(COMPANY_ID))?.refreshError).toMatch(/install the app again from the agency/);
    // Refused before: not presented again unless forced.
    await expect(b.core.installs.companyTokens.validToken(COMPANY_ID)).rejects.toThrow(/install the app again from the agency/);
    expect(companyRefreshCalls(b)).toHaveLength(1);
  });
});

describe("an agency-level UNINSTALL (no locationId)", () => {
  const uninstall = { type: "UNINSTALL", appId: APP_ID, companyId: COMPANY_ID };

  sqliteOnly("moves a location to another company with core.db")("confirmed by HighLevel refusing the company token: token removed, its locations marked (kept), others untouched, logged", async () => {
    const b = await start();
    await agencyInstall(b);
    await b.core.tokens.setConfig("a", { senderId: "BRAND" }, clock);
    await b.seed("solo");
    b.core.db.prepare("UPDATE tokens SET company_id = 'otherCo' WHERE location_id = 'solo'").run();
    b.crm.uninstallCompany();

    const res = await b.webhook(uninstall);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(await b.core.companies.ids()).toEqual([]);
    expect(await b.core.tokens.get("a")).toMatchObject({ senderId: "BRAND", uninstalledAt: clock });
    expect(await b.core.tokens.get("b")).toMatchObject({ uninstalledAt: clock });
    expect(await b.core.tokens.get("solo")).toMatchObject({ uninstalledAt: 0 });
    expect(b.logs.join("")).toContain(`company ${COMPANY_ID} uninstalled the app: HighLevel no longer accepts its token; its token removed, 2 location(s) marked uninstalled`);

    // Delivered again: nothing left to do, still 200.
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ok" });
  });

  test("a replayed one while the agency still has the app: ignored, one refresh a minute however many come", async () => {
    const b = await start();
    await agencyInstall(b);
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ignored" });
    // Within the minute HighLevel is not asked: not acknowledged, so a real one is not lost.
    for (let i = 0; i < 2; i++) expect((await b.webhook(uninstall)).status).toBe(429);
    expect(companyRefreshCalls(b)).toHaveLength(1);
    expect(await b.core.companies.ids()).toEqual([COMPANY_ID]);
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: 0 });
    expect(b.logs.join("")).toContain(`UNINSTALL of company ${COMPANY_ID} (agency-wide) ignored: HighLevel still accepts its token`);
  });

  test("a real one within a minute of a replayed one: 429 with Retry-After until the minute is over, then applied", async () => {
    const b = await start();
    await agencyInstall(b);
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ignored" }); // the replay
    clock += 15_000;
    b.crm.uninstallCompany();
    const real = await b.webhook(uninstall);
    expect(real.status).toBe(429);
    expect(real.headers.get("retry-after")).toBe("45");
    expect(await b.core.companies.ids()).toEqual([COMPANY_ID]);

    clock += 45_000; // HighLevel sends it again
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ok" });
    expect(await b.core.companies.ids()).toEqual([]);
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: clock });
  });

  test("without a company token, a location HighLevel showed installed under a minute ago makes it 429; the others are marked at once", async () => {
    const b = await start();
    await b.install("a");
    await b.install("b");
    const replay = await b.webhook({ type: "UNINSTALL", appId: APP_ID, locationId: "a", companyId: COMPANY_ID });
    expect(await replay.json()).toEqual({ status: "ignored" });
    clock += 10_000;
    b.crm.uninstall("a");
    b.crm.uninstall("b");

    const real = await b.webhook(uninstall);
    expect(real.status).toBe(429);
    expect(real.headers.get("retry-after")).toBe("50");
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: 0 });
    expect(await b.core.tokens.get("b")).toMatchObject({ uninstalledAt: clock });

    clock += 50_000;
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ok" });
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: clock });
  });

  test("when HighLevel cannot be asked: 429 with Retry-After, nothing changed; the retry applies it", async () => {
    const b = await start();
    await agencyInstall(b);
    b.crm.uninstallCompany();
    const tokenRoute = b.crm.received("POST /oauth/token").length;
    b.crm.on("POST /oauth/token", () => jsonResponse({ message: "unavailable" }, 503));
    const res = await b.webhook(uninstall);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBeTruthy();
    expect(b.crm.received("POST /oauth/token").length).toBe(tokenRoute + 1);
    expect(await b.core.tokens.get("a")).toMatchObject({ uninstalledAt: 0 });
    b.crm.on("POST /oauth/token", () => jsonResponse({ error: "invalid_grant" }, 400));
    expect(await (await b.webhook(uninstall)).json()).toEqual({ status: "ok" });
    expect((await b.core.tokens.get("a"))!.uninstalledAt).toBeGreaterThan(0);
  });
});
