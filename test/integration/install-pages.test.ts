import { describe, expect, test } from "vitest";
import { bridgePerTest, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";

/**
 * A person whose install fails followed HighLevel's link in a browser: they get a page
 * saying what happened and what to do, with the same status; scripts keep the plain text.
 */

const BROWSER = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
const start = bridgePerTest();

async function callback(bridge: Bridge, query: string, headers: Record<string, string> = BROWSER) {
  const res = await bridge.fetch(`/oauth-callback?${query}`, { headers });
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

describe("GET /oauth-callback from a browser: a failure is a page saying what to do", () => {
  test.each([
    ["error=access_denied", 400, "The install was not authorized in HighLevel.", "start again from HighLevel&#39;s marketplace"],
    ["state=xyz", 400, "This address carries no authorization code from HighLevel.", "Start the install from HighLevel&#39;s marketplace"],
    ["code=unknown-code", 500, "it may have expired or been used already", "Start the install again from HighLevel"],
  ])("?%s → %i, HTML", async (query, status, happened, todo) => {
    const bridge = await start({ worker: false });
    const res = await callback(bridge, query);
    expect(res.status).toBe(status);
    expect(res.type).toBe("text/html; charset=utf-8");
    expect(res.body).toContain("<h1>bridge is not installed</h1>");
    expect(res.body).toContain(happened);
    expect(res.body).toContain(todo);
  });

  test("what bridge was told is shown escaped", async () => {
    const bridge = await start({ worker: false });
    const res = await callback(bridge, "code=unknown-code");
    expect(res.body).toContain("<code>token exchange failed: token endpoint returned 400: {&#34;error&#34;:&#34;invalid_grant&#34;}</code>");
    const denied = await callback(bridge, `error=${encodeURIComponent("<script>alert(1)</script>")}`);
    expect(denied.body).not.toContain("<script>");
    expect(denied.body).toContain("authorization denied: &#60;script&#62;alert(1)&#60;/script&#62;");
  });

  test("a company not allowed: 403, and whom to ask", async () => {
    const bridge = await start({ worker: false, env: { ALLOWED_COMPANY_IDS: "operatorCo1" } });
    bridge.crm.grantCompany("code-co", { installedLocations: ["a"] });
    const res = await callback(bridge, "code=code-co");
    expect(res.status).toBe(403);
    expect(res.type).toBe("text/html; charset=utf-8");
    expect(res.body).toContain("This company may not install this app on this bridge.");
    expect(res.body).toContain("Ask the operator of this bridge to allow your company");
    expect(res.body).toContain(`company ${COMPANY_ID} may not install this app`);
  });

  test("a script that does not ask for HTML keeps the plain text", async () => {
    const bridge = await start({ worker: false });
    for (const headers of [{}, { accept: "application/json" }] as Record<string, string>[]) {
      expect(await callback(bridge, "error=access_denied", headers)).toEqual({
        status: 400,
        type: "text/plain; charset=utf-8",
        body: "authorization denied: access_denied",
      });
    }
  });
});

describe("GET /oauth-callback from a browser: a successful install says whether it may send yet", () => {
  test("an allowed company's location: connected", async () => {
    const bridge = await start({ worker: false });
    bridge.crm.grantLocation("code-loc", "loc-ok");
    const res = await callback(bridge, "code=code-loc");
    expect(res.status).toBe(200);
    expect(res.body).toContain("<h1>bridge is installed</h1>");
    expect(res.body).toContain("The SMS provider is connected to this location.");
  });

  test("a location that waits for approval is not called connected, and is told what sends", async () => {
    const bridge = await start({ worker: false, env: { ALLOWED_COMPANY_IDS: "" } });
    bridge.crm.grantLocation("code-loc", "loc-wait");
    const res = await callback(bridge, "code=code-loc");
    expect(res.status).toBe(200);
    expect(res.body).toContain("<h1>bridge is installed, waiting for approval</h1>");
    expect(res.body).not.toContain("connected");
    expect(res.body).toContain("It sends SMS once the operator of this SMS service approves it");
    expect(res.body).toContain("own Cast.ph API key");
  });

  test("an agency install that waits for approval says so for its locations", async () => {
    const bridge = await start({ worker: false, env: { ALLOWED_COMPANY_IDS: "" } });
    bridge.crm.grantCompany("code-co", { installedLocations: ["a", "b"] });
    const res = await callback(bridge, "code=code-co");
    expect(res.status).toBe(200);
    expect(res.body).toContain("<h1>bridge is installed, waiting for approval</h1>");
    expect(res.body).toContain("installed on 2 location(s) of 2. It sends SMS once the operator");
  });
});
