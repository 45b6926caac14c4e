import { afterEach, describe, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID, fieldsOf, highlevelFixture } from "../helpers/fake-crm.ts";
import { jsonResponse } from "../helpers/http.ts";

/**
 * Locations an agency install connects through /oauth/locationToken (spec 4.1, 4.2).
 * HighLevel's v2 reference (apps/oauth.json, GetLocationAccessTokenSuccessfulResponseDto;
 * ../shared/fixtures/highlevel/oauth-location-token.json) documents the answer as
 *   { "access_token": "ab12dc0ae1234a7898f9ff06d4f69gh", "token_type": "Bearer", "expires_in": 86399,
 *     "scope": "conversations/message.readonly conversations/message.write", "locationId": "l1C08ntBrFjLS0elLIYU",
 *     "planId": "l1C08ntBrFjLS0elLIYU", "userId": "l1C08ntBrFjLS0elLIYU", "appId": "6578278e879ad2646715ba9c",
 *     "versionId": "6578278e879ad2646715ba9c" }
 * with no refresh_token (a later change added one), and the fake CRM answers so.
 */

const MINUTE = 60_000;
const START = Date.parse("2030-03-01T08:00:00Z");
let clock = START;
afterEach(() => (clock = START));

const startWith = bridgePerTest();
// The clock stands still here, so no receipt would ever come due: report on acceptance.
const start = () => startWith({ now: () => clock, env: { DLR_WAIT: "0" } });

async function agencyInstall(b: Bridge, installedLocations = ["loc-1", "loc-2"]) {
  const company = b.crm.grantCompany("code-co", { installedLocations });
  const res = await b.fetch("/oauth-callback?code=code-co");
  expect(res.status).toBe(200);
  expect(await res.text()).toMatch(new RegExp(`\\b${installedLocations.length} location`));
  return company;
}

async function sendAndWait(b: Bridge, messageId: string) {
  expect((await b.webhook(outbound(messageId))).status).toBe(200);
  return waitFor(() => b.crm.statusReports().find((r) => r.messageId === messageId));
}

function locationTokenCalls(b: Bridge) {
  return b.crm.received("POST /oauth/locationToken").map((r) => ({ authorization: r.headers.authorization, ...fieldsOf(r) }));
}

function refreshGrants(b: Bridge) {
  return b.crm
    .received("POST /oauth/token")
    .map((r) => Object.fromEntries(new URLSearchParams(r.body)))
    .filter((form) => form.grant_type === "refresh_token")
    .map((form) => ({ user_type: form.user_type, refresh_token: form.refresh_token }));
}

describe("a locationToken answer without refresh_token, as HighLevel's v2 reference documents it", () => {
  test("an agency install stores each location, with no refresh token, and its messages are sent and reported", async () => {
    const b = await start();
    await agencyInstall(b);

    const stored = await b.core.tokens.get("loc-1");
    expect(stored).toMatchObject({ companyId: COMPANY_ID, refreshToken: "", expiresAt: clock + 86_399_000, approved: true });
    expect((await b.core.tokens.list()).map((r) => r.locationId)).toEqual(["loc-1", "loc-2"]);

    const report = await sendAndWait(b, "m-1");
    expect(report).toMatchObject({ authorization: `Bearer ${stored!.accessToken}`, body: { status: "delivered" } });
    expect(b.gateway.sent()).toHaveLength(1);
  });
});

describe("what bridge reads of a locationToken answer", () => {
  const documented = highlevelFixture("oauth-location-token");
  const { access_token, expires_in } = documented;
  test.each([
    ["the documented answer", documented, ""],
    ["with refresh_token (the later change)", { ...documented, refresh_token: "rt-later" }, "rt-later"],
    ["with refresh_token null", { ...documented, refresh_token: null }, ""],
    ["only access_token and expires_in: every optional field absent", { access_token, expires_in }, ""],
  ])("%s: accepted", async (_, answer, refreshToken) => {
    const b = await start();
    b.crm.on("POST /oauth/locationToken", () => jsonResponse(answer));

    const token = await b.core.clients.crm.getLocationToken("company-at", COMPANY_ID, "loc-1");

    expect(token).toMatchObject({ accessToken: access_token, refreshToken, expiresIn: expires_in });
  });

  test.each([
    ["no access_token", { ...documented, access_token: undefined }],
    ["an empty refresh_token", { ...documented, refresh_token: "" }],
    ["expires_in as text", { ...documented, expires_in: "86399" }],
  ])("%s: refused with the spec's text", async (_, answer) => {
    const b = await start();
    b.crm.on("POST /oauth/locationToken", () => jsonResponse(answer));

    await expect(b.core.clients.crm.getLocationToken("company-at", COMPANY_ID, "loc-1")).rejects.toThrow(/^failed to parse location token response: /);
  });
});

describe("such a location's token is renewed through its company's token", () => {
  /** The company's own token stays good for a month: only the location's comes due. */
  async function keepCompanyFresh(b: Bridge, company: { access_token: string; refresh_token: string }) {
    await b.core.companies.updateTokens(COMPANY_ID, company.access_token, company.refresh_token, clock + 30 * 24 * 60 * MINUTE, clock);
  }

  test("less than 5 minutes left: one JSON locationToken call with the company token; the message is reported with the new token", async () => {
    const b = await start();
    const company = await agencyInstall(b);
    await keepCompanyFresh(b, company);
    const installed = locationTokenCalls(b).length;
    const before = (await b.core.tokens.get("loc-1"))?.accessToken;
    clock += 86_399_000 - 4 * MINUTE;

    const report = await sendAndWait(b, "m-1");

    const renewals = b.crm.received("POST /oauth/locationToken").slice(installed);
    expect(renewals.map((r) => [r.headers["content-type"], JSON.parse(r.body) as unknown])).toEqual([
      ["application/json", { companyId: COMPANY_ID, locationId: "loc-1" }],
    ]);
    expect(renewals[0]?.headers).toMatchObject({ authorization: `Bearer ${company.access_token}`, version: "2021-07-28" });
    expect(refreshGrants(b)).toEqual([]);
    const stored = await b.core.tokens.get("loc-1");
    expect(stored).toMatchObject({ refreshToken: "", expiresAt: clock + 86_399_000, refreshError: "" });
    expect(stored?.accessToken).not.toBe(before);
    expect(report).toMatchObject({ authorization: `Bearer ${stored!.accessToken}`, body: { status: "delivered" } });
  });

  test("5 minutes or more left: no call", async () => {
    const b = await start();
    const company = await agencyInstall(b);
    await keepCompanyFresh(b, company);
    const before = b.crm.requests.length;
    clock += 86_399_000 - 5 * MINUTE;

    await b.core.installs.tokenService.validToken("loc-1");

    expect(b.crm.requests.length).toBe(before);
  });

  test("the company's token near expiry too: it is refreshed first (user_type=Company), then the location's fetched with the new one", async () => {
    const b = await start();
    const company = await agencyInstall(b);
    const installed = locationTokenCalls(b).length;
    clock += 86_399_000 - 4 * MINUTE;

    const record = await b.core.installs.tokenService.validToken("loc-1");

    expect(refreshGrants(b)).toEqual([{ user_type: "Company", refresh_token: company.refresh_token }]);
    const newCompanyToken = (await b.core.companies.get(COMPANY_ID))?.accessToken;
    expect(newCompanyToken).not.toBe(company.access_token);
    expect(locationTokenCalls(b).slice(installed)).toEqual([
      { authorization: `Bearer ${newCompanyToken}`, companyId: COMPANY_ID, locationId: "loc-1" },
    ]);
    expect(record).toEqual(await b.core.tokens.get("loc-1"));
    expect(record.expiresAt).toBe(clock + 86_399_000);
  });

  test("20 callers at once make one locationToken call and share its token", async () => {
    const b = await start();
    await keepCompanyFresh(b, await agencyInstall(b));
    const installed = locationTokenCalls(b).length;
    clock += 86_399_000 - MINUTE;

    const records = await Promise.all(Array.from({ length: 20 }, () => b.core.installs.tokenService.validToken("loc-1")));

    expect(locationTokenCalls(b).slice(installed)).toHaveLength(1);
    expect(new Set(records.map((r) => r.accessToken)).size).toBe(1);
  });

  test("an answer with refresh_token (HighLevel's later change) is stored, and the location refreshes with it instead", async () => {
    const b = await start();
    b.crm.locationTokens.withRefresh = true;
    await keepCompanyFresh(b, await agencyInstall(b));
    const stored = await b.core.tokens.get("loc-1");
    expect(stored?.refreshToken).toMatch(/^rt-loc-1-/);
    const installed = locationTokenCalls(b).length;
    clock += 86_399_000 - 4 * MINUTE;

    await b.core.installs.tokenService.validToken("loc-1");

    expect(refreshGrants(b)).toEqual([{ user_type: "Location", refresh_token: stored!.refreshToken }]);
    expect(locationTokenCalls(b)).toHaveLength(installed);
  });

  test("the agency uninstalled (its refresh token refused for good): the location says to install from the agency, and is not asked again", async () => {
    const b = await start();
    await agencyInstall(b);
    b.crm.uninstallCompany();
    clock += 86_399_000 - 4 * MINUTE;

    await expect(b.core.installs.tokenService.validToken("loc-1")).rejects.toThrow(/^refresh token failed: /);
    expect((await b.core.tokens.get("loc-1"))?.refreshError).toMatch(/install the app again from the agency$/);
    const asked = b.crm.requests.length;
    await expect(b.core.installs.tokenService.validToken("loc-1")).rejects.toThrow(/install the app again from the agency/);
    expect(b.crm.requests.length).toBe(asked);
  });

  test("a 401 from locationToken (the company's access token refused): the company's token is renewed and the location asked again", async () => {
    const b = await start();
    const company = await agencyInstall(b, ["loc-1"]);
    await keepCompanyFresh(b, company);
    b.crm.revokeAccessToken(company.access_token);
    const installed = locationTokenCalls(b).length;

    const record = await b.core.installs.tokenService.refresh("loc-1", true);

    expect(refreshGrants(b)).toEqual([{ user_type: "Company", refresh_token: company.refresh_token }]);
    const renewed = (await b.core.companies.get(COMPANY_ID))?.accessToken;
    expect(renewed).not.toBe(company.access_token);
    expect(locationTokenCalls(b).slice(installed).map((c) => c.authorization)).toEqual([`Bearer ${company.access_token}`, `Bearer ${renewed}`]);
    expect(record).toMatchObject({ refreshError: "", expiresAt: clock + 86_399_000 });
    expect((await b.core.tokens.get("loc-1"))?.refreshError).toBe("");
  });

  test("a 401 again after the company's token was renewed marks nothing: it may pass", async () => {
    const b = await start();
    await keepCompanyFresh(b, await agencyInstall(b, ["loc-1"]));
    b.crm.on("POST /oauth/locationToken", () => jsonResponse({ message: "Invalid JWT" }, 401));
    const installed = locationTokenCalls(b).length;

    await expect(b.core.installs.tokenService.refresh("loc-1", true)).rejects.toThrow(/^refresh token failed: locationToken endpoint returned 401/);
    expect(locationTokenCalls(b).length - installed).toBe(2);
    expect(refreshGrants(b).map((g) => g.user_type)).toEqual(["Company"]);
    expect((await b.core.tokens.get("loc-1"))?.refreshError).toBe("");
  });

  test("HighLevel unreachable for the renewal: an error that may pass, nothing marked", async () => {
    const b = await start();
    await keepCompanyFresh(b, await agencyInstall(b));
    b.crm.on("POST /oauth/locationToken", () => new Response("upstream down", { status: 503 }));
    clock += 86_399_000 - 4 * MINUTE;

    await expect(b.core.installs.tokenService.validToken("loc-1")).rejects.toThrow(/^refresh token failed: locationToken endpoint returned 503/);
    expect((await b.core.tokens.get("loc-1"))?.refreshError).toBe("");
  });

  /**
   * `count` reports waiting for loc-1's renewal (16: as many as there are workers); HighLevel
   * answers it 429 with a Retry-After of a minute. The report that met the 429 waits in the
   * queue until then, on the test's clock; the others are told to wait out the rest of it.
   */
  async function reportsThrough429(b: Bridge, count = 16) {
    await keepCompanyFresh(b, await agencyInstall(b));
    await b.seed("loc-9");
    const installed = locationTokenCalls(b).length;
    clock += 86_399_000 - 4 * MINUTE;
    let limited = true;
    const documented = highlevelFixture("oauth-location-token");
    b.crm.on("POST /oauth/locationToken", () =>
      limited ? jsonResponse({ message: "Too many requests" }, 429, { "retry-after": "60" }) : jsonResponse(documented),
    );

    for (let i = 0; i < count; i++) expect((await b.webhook(outbound(`m-${i}`))).status).toBe(200);
    await waitFor(() => b.gateway.sent().length === count);
    await waitFor(() => locationTokenCalls(b).length > installed);
    expect((await b.webhook(outbound("other", { locationId: "loc-9" }))).status).toBe(200);

    // Before, every worker slept through Retry-After inside the renewal, and loc-9 waited.
    expect(await waitFor(() => b.crm.statusReports().find((r) => r.messageId === "other"))).toMatchObject({ body: { status: "delivered" } });
    // One 429, not one per report: the others wait for the renewal, then for the Retry-After.
    expect(locationTokenCalls(b).slice(installed)).toHaveLength(1);
    expect(b.crm.statusReports().filter((r) => r.messageId.startsWith("m-"))).toEqual([]);

    // Once the Retry-After is over, the renewal is asked again and the report that met the
    // 429 goes at the queue's next look (the others wait out their minute on the wall clock).
    limited = false;
    clock += MINUTE + 1000;
    await waitFor(() => b.crm.statusReports().some((r) => r.messageId.startsWith("m-")));
    expect(await b.core.tokens.get("loc-1")).toMatchObject({ accessToken: documented.access_token, expiresAt: clock + Number(documented.expires_in) * 1000 });
  }

  test("HighLevel's 429 on the renewal holds no worker: it is asked once, and another location's message goes meanwhile", async () => {
    await reportsThrough429(await start());
  });

  test("a report that ended while the queue's look was out is not run again from that look's list: it goes once the Retry-After is over", async () => {
    const b = await start();
    // Each look at the queue takes its time, as on a loaded database: the report that met the
    // 429 ends while a look is out whose list, read before, still says it is due.
    const { jobs } = b.core;
    const due = jobs.due.bind(jobs);
    jobs.due = async (...args) => {
      const found = await due(...args);
      await new Promise((resolve) => setTimeout(resolve, 500));
      return found;
    };
    await reportsThrough429(b, 4); // fewer than the workers: the queue keeps looking while they run
  });

  test("a location with its own refresh token is not held to that rule: a 403 from /oauth/token marks nothing", async () => {
    const b = await start();
    await b.install("loc-own");
    b.crm.on("POST /oauth/token", () => jsonResponse({ message: "Forbidden" }, 403));
    clock += 86_399_000 - 4 * MINUTE;

    await expect(b.core.installs.tokenService.validToken("loc-own")).rejects.toThrow(/^refresh token failed: token endpoint returned 403/);
    expect((await b.core.tokens.get("loc-own"))?.refreshError).toBe("");
  });

  test("an UNINSTALL of such a location is confirmed by HighLevel refusing its token through the company", async () => {
    const b = await start();
    await keepCompanyFresh(b, await agencyInstall(b));
    expect(await b.core.installs.uninstall("loc-1")).toEqual({ verdict: "still_installed" });

    b.crm.uninstall("loc-1");
    clock += 2 * MINUTE;
    expect(await b.core.installs.uninstall("loc-1")).toEqual({ verdict: "uninstalled" });
    expect(await b.core.tokens.get("loc-2")).toMatchObject({ uninstalledAt: 0, refreshError: "" });
  });
});
