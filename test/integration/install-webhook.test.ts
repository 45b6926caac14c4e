import { describe, expect, test } from "vitest";
import { APP_ID, bridgePerTest, waitFor, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID, fieldsOf } from "../helpers/fake-crm.ts";
import { jsonResponse } from "../helpers/http.ts";

/**
 * INSTALL webhooks of locations an agency adds after its install, through real HTTP
 * (docs/operations.md, "Agencies: what you do once, and what happens by itself after").
 */

const start = bridgePerTest();

async function agencyInstall(b: Bridge, installedLocations = ["a", "b"]) {
  const granted = b.crm.grantCompany("code-co", { installedLocations });
  expect((await b.fetch("/oauth-callback?code=code-co")).status).toBe(200);
  return granted;
}

function installEvent(fields: Record<string, unknown> = {}) {
  return {
    type: "INSTALL",
    appId: APP_ID,
    installType: "Location",
    locationId: "new-loc",
    companyId: COMPANY_ID,
    userId: "user-1",
    companyName: "Agency <One>",
    isWhitelabelCompany: false,
    timestamp: "2030-03-01T08:00:00.000Z",
    webhookId: "wh-1",
    ...fields,
  };
}

function locationTokenCalls(b: Bridge, locationId = "new-loc") {
  return b.crm
    .received("POST /oauth/locationToken")
    .filter((r) => fieldsOf(r).locationId === locationId);
}

describe("INSTALL of a location added later", () => {
  test("with companyId: its token through /oauth/locationToken with the stored company token; stored, approved", async () => {
    const b = await start();
    const company = await agencyInstall(b);

    const res = await b.webhook(installEvent());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });

    const [call, ...more] = locationTokenCalls(b);
    expect(more).toEqual([]);
    expect(JSON.parse(call!.body)).toEqual({ companyId: COMPANY_ID, locationId: "new-loc" });
    expect(call!.headers).toMatchObject({
      authorization: `Bearer ${company.access_token}`,
      version: "2021-07-28",
      "content-type": expect.stringMatching(/^application\/json/),
    });
    expect(await b.core.tokens.get("new-loc")).toMatchObject({ companyId: COMPANY_ID, approved: true, accessToken: expect.stringMatching(/^at-new-loc-/) });
  });

  test("the same INSTALL again (or twice at once) does no harm: one token call, one record", async () => {
    const b = await start();
    await agencyInstall(b);
    const answers = await Promise.all([b.webhook(installEvent()), b.webhook(installEvent())]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const stored = await b.core.tokens.get("new-loc");

    const again = await b.webhook(installEvent());
    expect(await again.json()).toEqual({ status: "ok" });
    expect(locationTokenCalls(b)).toHaveLength(1);
    expect(await b.core.tokens.get("new-loc")).toEqual(stored);
  });

  test("without companyId: each stored company is tried until HighLevel gives the token", async () => {
    const b = await start({ env: { ALLOWED_COMPANY_IDS: `aOtherCo,${COMPANY_ID}` } });
    await agencyInstall(b);
    await b.core.companies.save({ companyId: "aOtherCo", accessToken: "other-at", refreshToken: "other-rt", expiresAt: Date.now() + 86_400_000 }, Date.now());
    b.crm.on("POST /oauth/locationToken", (req) => {
      const { companyId, locationId } = fieldsOf(req) as { companyId: string; locationId: string };
      if (companyId !== COMPANY_ID) return jsonResponse({ message: "Location not found for this company" }, 400);
      return jsonResponse({ access_token: `at-${locationId}`, refresh_token: `rt-${locationId}`, expires_in: 3600, locationId, companyId });
    });

    const res = await b.webhook(installEvent({ companyId: undefined }));
    expect(await res.json()).toEqual({ status: "ok" });
    // aOtherCo comes first and is refused; then the agency whose location it is.
    expect(locationTokenCalls(b).map((r) => fieldsOf(r))).toEqual([
      { companyId: "aOtherCo", locationId: "new-loc" },
      { companyId: COMPANY_ID, locationId: "new-loc" },
    ]);
    expect(await b.core.tokens.get("new-loc")).toMatchObject({ companyId: COMPANY_ID, accessToken: "at-new-loc" });
  });

  test("arriving while the agency's code exchange is still running: it waits for it, then installs", async () => {
    const b = await start();
    const release = b.crm.holdExchanges();
    b.crm.grantCompany("code-co", { installedLocations: ["a"] });
    const callback = b.fetch("/oauth-callback?code=code-co");
    await waitFor(() => b.crm.received("POST /oauth/token").length === 1);

    const install = b.webhook(installEvent());
    await waitFor(() => b.logs.join("").includes("INSTALL of location new-loc waits for an install in progress"));
    expect(locationTokenCalls(b)).toEqual([]);
    release();

    const [page, res] = await Promise.all([callback, install]);
    expect(page.status).toBe(200);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(await b.core.tokens.get("new-loc")).toMatchObject({ companyId: COMPANY_ID });
    expect(await b.core.tokens.get("a")).toMatchObject({ companyId: COMPANY_ID });
  });

  test("arriving at another server while the agency's code exchange runs on the first: it waits for it, then installs", async () => {
    const first = await start();
    // The second server: the same database, HighLevel and signing key as the first.
    const second = await start({ env: first.env });
    const release = first.crm.holdExchanges();
    first.crm.grantCompany("code-co", { installedLocations: ["a"] });
    const callback = first.fetch("/oauth-callback?code=code-co");
    await waitFor(() => first.crm.received("POST /oauth/token").length === 1);
    expect((await second.core.leases.list()).filter((l) => l.name.startsWith("exchange:"))).toHaveLength(1);

    const install = second.webhook(installEvent(), { key: first.signingKey });
    await waitFor(() => second.logs.join("").includes("INSTALL of location new-loc waits for an install in progress"));
    release();
    const [page, res] = await Promise.all([callback, install]);
    expect(page.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(await second.core.tokens.get("new-loc")).toMatchObject({ companyId: COMPANY_ID });
    expect((await second.core.leases.list()).filter((l) => l.name.startsWith("exchange:"))).toEqual([]);
  });

  test("no company token known and no install running: 429 with Retry-After, a warning saying how to fix it; the retry works once the agency installs", async () => {
    const b = await start();
    const early = await b.webhook(installEvent());
    expect(early.status).toBe(429);
    expect(early.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await b.core.tokens.get("new-loc")).toBeUndefined();
    expect(b.logs.join("")).toMatch(/\[warn\] INSTALL of location new-loc not applied yet: bridge holds no token of company company-1; .*install the app again from the agency/);

    await agencyInstall(b);
    expect((await b.webhook(installEvent())).status).toBe(200);
    expect(await b.core.tokens.get("new-loc")).toMatchObject({ companyId: COMPANY_ID });
  });

  test("HighLevel failing (5xx): 429 so that it is sent again; a 4xx: 200 ignored and logged", async () => {
    const b = await start();
    await agencyInstall(b);
    b.crm.on("POST /oauth/locationToken", () => jsonResponse({ message: "down" }, 502));
    expect((await b.webhook(installEvent())).status).toBe(429);
    b.crm.on("POST /oauth/locationToken", () => jsonResponse({ message: "app not installed" }, 403));
    const refused = await b.webhook(installEvent());
    expect(await refused.json()).toEqual({ status: "ignored" });
    expect(b.logs.join("")).toContain("INSTALL of location new-loc not applied: HighLevel refused its token");
    expect(await b.core.tokens.get("new-loc")).toBeUndefined();
  });

  test("an INSTALL from a company not in ALLOWED_COMPANY_IDS: 200 ignored, nothing asked, nothing stored", async () => {
    const b = await start({ env: { ALLOWED_COMPANY_IDS: "operatorCo" } });
    const res = await b.webhook(installEvent());
    expect(await res.json()).toEqual({ status: "ignored" });
    expect(b.crm.requests).toEqual([]);
    expect(b.logs.join("")).toContain(`[warn] INSTALL of location new-loc refused: company ${COMPANY_ID} may not install this app`);
  });

  test.each([
    { name: "another app's", appId: "ffffffffffffffffffffffff" },
    { name: "no appId", appId: undefined },
  ])("$name INSTALL: 200 ignored, logged at info, no CRM call", async ({ appId }) => {
    const b = await start();
    await agencyInstall(b);
    const before = b.crm.requests.length;
    const res = await b.webhook(installEvent({ appId }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ignored" });
    expect(b.crm.requests.length).toBe(before);
    expect(b.logs.join("")).toMatch(/\[info\] INSTALL of location new-loc ignored: its appId .* is not this app's/);
  });

  test("an agency-level INSTALL (no locationId): 200, nothing to do", async () => {
    const b = await start();
    const res = await b.webhook(installEvent({ locationId: undefined, installType: "Company" }));
    expect(await res.json()).toEqual({ status: "ok" });
    expect(b.crm.requests).toEqual([]);
  });

  test("a malformed locationId: 400, never 500", async () => {
    const b = await start();
    const res = await b.webhook(installEvent({ locationId: "../x\n" }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringContaining("invalid INSTALL event") });
  });
});
