import { afterEach, describe, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";

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

describe("a locationToken answer without refresh_token, as HighLevel's v2 reference documents it", () => {
  test("an agency install stores each location, with no refresh token, and its messages are sent and reported", async () => {
    const b = await start();
    await agencyInstall(b);

    const stored = b.core.tokens.get("loc-1");
    expect(stored).toMatchObject({ companyId: COMPANY_ID, refreshToken: "", expiresAt: clock + 86_399_000, approved: true });
    expect(b.core.tokens.list().map((r) => r.locationId)).toEqual(["loc-1", "loc-2"]);

    const report = await sendAndWait(b, "m-1");
    expect(report).toMatchObject({ authorization: `Bearer ${stored!.accessToken}`, body: { status: "delivered" } });
    expect(b.gateway.sent()).toHaveLength(1);
  });
});
