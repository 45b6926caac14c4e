import { beforeEach, describe, expect, test } from "vitest";
import { APP_ID, CLIENT_ID, CLIENT_SECRET, bridgePerTest, type Bridge } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";
import { SPEC_SCOPES } from "../helpers/spec.ts";
import { jsonResponse, type Recorded } from "../helpers/http.ts";

/** The install flow (spec 4.1, CONTRACT 3 and 6) through real HTTP against the fake CRM. */

const T0 = Date.UTC(2030, 0, 15, 12, 0, 0);
const DAY_S = 86399; // the fake CRM's expires_in
const CALLBACK = "http://bridge.test/oauth-callback";
const SCOPES = SPEC_SCOPES;

const start = bridgePerTest();
let clock = T0;
let bridge: Bridge;
beforeEach(async () => {
  clock = T0;
  bridge = await start({ now: () => clock });
});

/** GET /oauth-callback with the given raw query string. */
async function callback(query: string) {
  const res = await bridge.fetch(`/oauth-callback?${query}`);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

/** A location token answer as HighLevel's /oauth/locationToken gives it. */
function locationToken(locationId: string) {
  return jsonResponse({
    access_token: `at-${locationId}-bulk`,
    refresh_token: `rt-${locationId}-bulk`,
    expires_in: DAY_S,
    token_type: "Bearer",
    userType: "Location",
    locationId,
    companyId: COMPANY_ID,
  });
}

function bodyOf(req: Recorded): { companyId: string; locationId: string } {
  return JSON.parse(req.body) as { companyId: string; locationId: string };
}

async function storedIds(): Promise<string[]> {
  return (await bridge.core.tokens.list()).map((r) => r.locationId);
}

function companyAccessToken(code: string): string {
  return String(bridge.crm.codes.get(code)?.access_token);
}

describe("GET /install", () => {
  test("redirects 302 to the marketplace location chooser with code, callback, client id and the 7 scopes", async () => {
    const res = await bridge.fetch("/install", { redirect: "manual" });
    expect(res.status).toBe(302);
    const location = res.headers.get("location") ?? "";
    const url = new URL(location);
    expect(`${url.origin}${url.pathname}`).toBe("http://marketplace.test/oauth/chooselocation");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      redirect_uri: CALLBACK,
      client_id: CLIENT_ID,
      scope: SCOPES.join(" "),
    });

    // The raw query: URL-encoded proper, spaces as %20 (never "+").
    const raw = location.slice(location.indexOf("?") + 1).split("&");
    expect(raw).toContain(`redirect_uri=${encodeURIComponent(CALLBACK)}`);
    expect(raw).toContain("redirect_uri=http%3A%2F%2Fbridge.test%2Foauth-callback");
    expect(raw).toContain(`client_id=${encodeURIComponent(CLIENT_ID)}`);
    expect(raw).toContain(`scope=${SCOPES.map(encodeURIComponent).join("%20")}`);
    expect(location).not.toContain("+");
  });
});

describe("GET /oauth-callback: failures", () => {
  test.each([
    ["error=access_denied", "authorization denied: access_denied"],
    ["error=access_denied&code=abc", "authorization denied: access_denied"],
    ["error=consent%20required", "authorization denied: consent required"],
    ["", "missing authorization code"],
    ["code=", "missing authorization code"],
    ["state=xyz", "missing authorization code"],
  ])("?%s → 400 %j, no token call", async (query, text) => {
    const res = await callback(query);
    expect(res).toEqual({ status: 400, type: expect.stringMatching(/^text\/plain/), body: text });
    expect(bridge.crm.received("POST /oauth/token")).toEqual([]);
    expect(await storedIds()).toEqual([]);
  });

  test("a code the token endpoint refuses → 500 with the endpoint's status and body", async () => {
    const res = await callback("code=unknown-code");
    expect(res).toEqual({
      status: 500,
      type: expect.stringMatching(/^text\/plain/),
      body: 'token exchange failed: token endpoint returned 400: {"error":"invalid_grant"}',
    });
    expect(await storedIds()).toEqual([]);
  });

  test.each([
    ["not JSON", "<html>Bad gateway</html>"],
    ["JSON without the token fields", JSON.stringify({ hello: "world" })],
  ])("a 200 token answer that is %s → 500 failed to parse token response", async (_what, body) => {
    bridge.crm.on("POST /oauth/token", () => new Response(body, { status: 200, headers: { "content-type": "text/html" } }));
    const res = await callback("code=c1");
    expect(res.status).toBe(500);
    expect(res.body).toMatch(/^token exchange failed: failed to parse token response: ./);
    expect(await storedIds()).toEqual([]);
  });

  test.each([
    ["userType Location, locationId null", { userType: "Location", locationId: null }],
    ["userType Location, locationId empty", { userType: "Location", locationId: "" }],
    ["userType Location, no locationId field", { userType: "Location", locationId: undefined }],
    ["no userType, no locationId", { userType: undefined, locationId: undefined }],
  ])("%s → 400 and nothing stored", async (_what, extra) => {
    bridge.crm.grantLocation("c1", "loc-x", extra);
    const res = await callback("code=c1");
    expect(res).toEqual({
      status: 400,
      type: expect.stringMatching(/^text\/plain/),
      body: "GHL token response did not include a locationId",
    });
    expect(await storedIds()).toEqual([]);
    expect(bridge.crm.received("POST /oauth/locationToken")).toEqual([]);
    expect(bridge.crm.received("GET /oauth/installedLocations")).toEqual([]);
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("a store that refuses the write → 500 failed to save token", async () => {
    bridge.core.db.exec("CREATE TRIGGER fail BEFORE INSERT ON tokens BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    bridge.crm.grantLocation("c1", "loc-1");
    const res = await callback("code=c1");
    expect(res).toEqual({ status: 500, type: expect.stringMatching(/^text\/plain/), body: "failed to save token" });
    expect(await storedIds()).toEqual([]);
  });
});

describe("GET /oauth-callback: single location", () => {
  test("stores the record and answers an HTML success page", async () => {
    const granted = bridge.crm.grantLocation("c1", "loc-1");
    const res = await callback("code=c1");
    expect(res.status).toBe(200);
    expect(res.type).toBe("text/html; charset=utf-8");
    expect(res.body).toMatch(/<html/i);
    expect(res.body).toMatch(/installed|success/i);
    expect(res.body).toMatch(/close this tab/i);

    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({
      locationId: "loc-1",
      companyId: COMPANY_ID,
      accessToken: granted.access_token,
      refreshToken: granted.refresh_token,
      expiresAt: T0 + DAY_S * 1000,
      installedAt: T0,
      updatedAt: T0,
      senderId: "",
      smsApiKey: "",
    });
    expect(await storedIds()).toEqual(["loc-1"]);
  });

  test("a HEAD (a link checker) does not spend the code: 405, no token call; the user's GET then installs", async () => {
    bridge.crm.grantLocation("c1", "loc-1");
    const head = await bridge.fetch("/oauth-callback?code=c1", { method: "HEAD" });
    expect(head.status).toBe(405);
    expect(head.headers.get("allow")).toBe("GET");
    expect(bridge.crm.received("POST /oauth/token")).toEqual([]);
    expect(await storedIds()).toEqual([]);

    expect((await callback("code=c1")).status).toBe(200);
    expect(await storedIds()).toEqual(["loc-1"]);
  });

  test("an empty error parameter does not count as a denial", async () => {
    bridge.crm.grantLocation("c1", "loc-1");
    const res = await callback("error=&code=c1");
    expect(res.status).toBe(200);
    expect(await storedIds()).toEqual(["loc-1"]);
  });

  test("the code exchange is a form post with client credentials, the code and the callback URL", async () => {
    bridge.crm.grantLocation("c1", "loc-1");
    await callback("code=c1");
    const [exchange, ...more] = bridge.crm.received("POST /oauth/token");
    expect(more).toEqual([]);
    expect(exchange?.headers["content-type"]).toMatch(/^application\/x-www-form-urlencoded/);
    expect(Object.fromEntries(new URLSearchParams(exchange?.body))).toEqual({
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      grant_type: "authorization_code",
      code: "c1",
      redirect_uri: CALLBACK,
    });
  });

  test("a reinstall updates the tokens but keeps installed_at and the location's config", async () => {
    bridge.crm.grantLocation("c1", "loc-1");
    expect((await callback("code=c1")).status).toBe(200);
    await bridge.core.tokens.setConfig("loc-1", { senderId: "MYSHOP", smsApiKey: "loc-key-1234567890" }, clock);

    clock = T0 + 3_600_000;
    const again = bridge.crm.grantLocation("c2", "loc-1");
    expect((await callback("code=c2")).status).toBe(200);

    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({
      accessToken: again.access_token,
      refreshToken: again.refresh_token,
      expiresAt: clock + DAY_S * 1000,
      installedAt: T0,
      updatedAt: clock,
      senderId: "MYSHOP",
      smsApiKey: "loc-key-1234567890",
    });
    expect(await storedIds()).toEqual(["loc-1"]);
  });
});

describe("GET /oauth-callback: bulk (company) install", () => {
  test("installedLocations from the token: one locationToken call each, all stored, list endpoint not called", async () => {
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b", "c"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.type).toBe("text/html; charset=utf-8");
    expect(res.body).toMatch(/installed|success/i);
    expect(res.body).toMatch(/\b3 location/);

    const calls = bridge.crm.received("POST /oauth/locationToken");
    expect(calls.map(bodyOf)).toEqual(["a", "b", "c"].map((locationId) => ({ companyId: COMPANY_ID, locationId })));
    for (const call of calls) {
      expect(call.headers).toMatchObject({
        authorization: `Bearer ${companyAccessToken("co")}`,
        version: "2021-07-28",
        // The spec (4.2) pins JSON here, though HighLevel's reference page shows a form.
        "content-type": expect.stringMatching(/^application\/json/),
      });
    }
    expect(bridge.crm.received("GET /oauth/installedLocations")).toEqual([]);

    const records = await bridge.core.tokens.list();
    expect(records.map((r) => [r.locationId, r.companyId])).toEqual([
      ["a", COMPANY_ID],
      ["b", COMPANY_ID],
      ["c", COMPANY_ID],
    ]);
    for (const r of records) {
      expect(r.accessToken).toMatch(new RegExp(`^at-${r.locationId}-`));
      expect(r.accessToken).not.toBe(companyAccessToken("co"));
      expect(r).toMatchObject({ expiresAt: T0 + DAY_S * 1000, installedAt: T0, updatedAt: T0 });
    }
  });

  test("without installedLocations: lists them via /oauth/installedLocations with appId, companyId and the company token", async () => {
    bridge.crm.installed.ids = ["l1", "l2"];
    bridge.crm.grantCompany("co");
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b2 location/);

    const [list] = bridge.crm.received("GET /oauth/installedLocations");
    expect(list?.query.get("appId")).toBe(APP_ID);
    expect(list?.query.get("companyId")).toBe(COMPANY_ID);
    expect(list?.headers).toMatchObject({ authorization: `Bearer ${companyAccessToken("co")}`, version: "2021-07-28" });
    expect(await storedIds()).toEqual(["l1", "l2"]);
  });

  test("an empty installedLocations array also falls back to the list endpoint", async () => {
    bridge.crm.installed.ids = ["l1"];
    bridge.crm.grantCompany("co", { installedLocations: [] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(bridge.crm.received("GET /oauth/installedLocations")).toHaveLength(1);
    expect(await storedIds()).toEqual(["l1"]);
  });

  test("follows the pages until count is reached, though each page is shorter than the limit asked", async () => {
    const ids = Array.from({ length: 250 }, (_, i) => `loc-${String(i).padStart(3, "0")}`);
    bridge.crm.installed.ids = ids;
    bridge.crm.installed.pageSize = 40;
    bridge.crm.grantCompany("co");
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b250 location/);

    const pages = bridge.crm.received("GET /oauth/installedLocations");
    expect(pages.map((p) => Number(p.query.get("skip")))).toEqual([0, 40, 80, 120, 160, 200, 240]);
    for (const page of pages) {
      expect(page.query.get("appId")).toBe(APP_ID); // else HighLevel answers 422 "appId must be a string"
      expect(page.query.get("companyId")).toBe(COMPANY_ID);
      expect(Number(page.query.get("limit"))).toBeGreaterThan(40);
    }
    expect(bridge.crm.received("POST /oauth/locationToken").map((r) => bodyOf(r).locationId)).toEqual(ids);
    expect(await storedIds()).toEqual(ids);
  });

  test("a locationToken failure skips that location only", async () => {
    bridge.crm.on("POST /oauth/locationToken", (req) => {
      const { locationId } = bodyOf(req);
      return locationId === "b" ? jsonResponse({ message: "Internal error" }, 500) : locationToken(locationId);
    });
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b", "c"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b2 location/);
    expect(bridge.crm.received("POST /oauth/locationToken").map((r) => bodyOf(r).locationId)).toEqual(["a", "b", "c"]);
    expect(await storedIds()).toEqual(["a", "c"]);
    expect(res.body).toMatch(/<li><code>b<\/code>: locationToken endpoint returned 500: /);
    expect(bridge.logs.join("")).toContain("locationToken endpoint returned 500: ");
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("a save failure skips that location only", async () => {
    bridge.core.db.exec(
      "CREATE TRIGGER fail_b BEFORE INSERT ON tokens WHEN NEW.location_id = 'b' BEGIN SELECT RAISE(ABORT, 'disk full'); END",
    );
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b", "c"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b2 location/);
    expect(await storedIds()).toEqual(["a", "c"]);
    expect(res.body).toMatch(/<li><code>b<\/code>: .*disk full/);
    expect(bridge.logs.join("")).toContain("disk full");
  });

  test("every locationToken call failing still answers 200 with 0 locations", async () => {
    bridge.crm.on("POST /oauth/locationToken", () => jsonResponse({ message: "Forbidden" }, 403));
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.type).toBe("text/html; charset=utf-8");
    expect(res.body).toMatch(/\b0 location/);
    expect(await storedIds()).toEqual([]);
  });

  test("a 429 from locationToken is retried and the location still saved", async () => {
    let refusals = 0;
    bridge.crm.on("POST /oauth/locationToken", (req) => {
      const { locationId } = bodyOf(req);
      if (locationId === "b" && refusals < 2) {
        refusals++;
        return jsonResponse({ message: "Too many requests" }, 429, { "retry-after": "0" });
      }
      return locationToken(locationId);
    });
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b", "c"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b3 location/);
    expect(bridge.crm.received("POST /oauth/locationToken").map((r) => bodyOf(r).locationId)).toEqual([
      "a",
      "b",
      "b",
      "b",
      "c",
    ]);
    expect(await storedIds()).toEqual(["a", "b", "c"]);
  });

  test("a locationToken 200 that is not a token skips that location and logs why", async () => {
    bridge.crm.on("POST /oauth/locationToken", (req) => {
      const { locationId } = bodyOf(req);
      return locationId === "b" ? new Response("<html>oops</html>", { status: 200 }) : locationToken(locationId);
    });
    bridge.crm.grantCompany("co", { installedLocations: ["a", "b", "c"] });
    const res = await callback("code=co");
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/\b2 location/);
    expect(await storedIds()).toEqual(["a", "c"]);
    expect(res.body).toMatch(/<li><code>b<\/code>: .*failed to parse location token response/);
    expect(bridge.logs.join("")).toContain("failed to parse location token response");
  });

  const BULK = "failed to exchange company token for location tokens: ";
  test.each([
    {
      what: "no installed locations",
      answer: () => jsonResponse({ locations: [], count: 0 }),
      text: `${BULK}no locations found for company ${COMPANY_ID}`,
    },
    {
      what: "the list endpoint answering 401",
      answer: () => new Response('{"message":"Invalid JWT"}', { status: 401 }),
      text: `${BULK}list locations: locations endpoint returned 401: {"message":"Invalid JWT"}`,
    },
    {
      what: "the list endpoint answering 200 with garbage",
      answer: () => new Response("<html>maintenance</html>", { status: 200 }),
      text: expect.stringMatching(
        /^failed to exchange company token for location tokens: list locations: failed to parse locations response: ./,
      ),
    },
  ])("$what → 500, nothing stored", async ({ answer, text }) => {
    bridge.crm.on("GET /oauth/installedLocations", answer);
    bridge.crm.grantCompany("co");
    const res = await callback("code=co");
    expect(res.status).toBe(500);
    expect(res.type).toMatch(/^text\/plain/);
    expect(res.body).toEqual(text);
    expect(bridge.crm.received("POST /oauth/locationToken")).toEqual([]);
    expect(await storedIds()).toEqual([]);
  });
});
