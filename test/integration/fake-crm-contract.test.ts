import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { highlevelFixture, startFakeCrm, type FakeCrm } from "../helpers/fake-crm.ts";

/**
 * The fake CRM answers in HighLevel's documented shapes (../shared/fixtures/highlevel):
 * the same field names, each of the same JSON type, and no field the documentation lacks.
 * A shape from memory tests nothing about HighLevel.
 */
let crm: FakeCrm;
beforeAll(async () => (crm = await startFakeCrm()));
afterAll(() => crm.close());

async function post(path: string, body: string, headers: Record<string, string>): Promise<unknown> {
  const res = await fetch(`${crm.url}${path}`, { method: "POST", body, headers });
  expect(res.status).toBe(200);
  return res.json();
}

function tokenGrant(fields: Record<string, string>): Promise<unknown> {
  const body = new URLSearchParams({ client_id: "id", client_secret: "secret", ...fields }).toString();
  return post("/oauth/token", body, { "content-type": "application/x-www-form-urlencoded" });
}

async function companyToken(code: string): Promise<string> {
  crm.grantCompany(code);
  const answer = (await tokenGrant({ grant_type: "authorization_code", code })) as { access_token: string };
  return answer.access_token;
}

describe("the fake CRM answers as HighLevel documents", () => {
  test("POST /oauth/token, a location's code and its refresh: oauth-token-location.json", async () => {
    crm.grantLocation("loc-code", "loc-1");
    const exchanged = (await tokenGrant({ grant_type: "authorization_code", code: "loc-code" })) as { refresh_token: string };
    expect(differences(exchanged, highlevelFixture("oauth-token-location"))).toEqual([]);
    const refreshed = await tokenGrant({ grant_type: "refresh_token", refresh_token: exchanged.refresh_token, user_type: "Location" });
    expect(differences(refreshed, highlevelFixture("oauth-token-location"))).toEqual([]);
  });

  test("POST /oauth/token, an agency's code and its refresh: oauth-token-company.json", async () => {
    crm.grantCompany("co-code");
    const exchanged = (await tokenGrant({ grant_type: "authorization_code", code: "co-code" })) as { refresh_token: string };
    expect(differences(exchanged, highlevelFixture("oauth-token-company"))).toEqual([]);
    const refreshed = await tokenGrant({ grant_type: "refresh_token", refresh_token: exchanged.refresh_token, user_type: "Company" });
    expect(differences(refreshed, highlevelFixture("oauth-token-company"))).toEqual([]);
  });

  test("POST /oauth/locationToken, as JSON and as a form: oauth-location-token.json, no refresh_token", async () => {
    const token = await companyToken("co-lt");
    const headers = { authorization: `Bearer ${token}`, version: "2021-07-28" };
    const json = await post("/oauth/locationToken", JSON.stringify({ companyId: "company-1", locationId: "loc-2" }), {
      ...headers,
      "content-type": "application/json",
    });
    const form = await post("/oauth/locationToken", "companyId=company-1&locationId=loc-3", {
      ...headers,
      "content-type": "application/x-www-form-urlencoded",
    });
    for (const answer of [json, form]) expect(differences(answer, highlevelFixture("oauth-location-token"))).toEqual([]);
    expect(json).not.toHaveProperty("refresh_token");
    expect(crm.received("POST /oauth/locationToken").map((r) => r.body)).toEqual([
      '{"companyId":"company-1","locationId":"loc-2"}',
      "companyId=company-1&locationId=loc-3",
    ]);
  });

  test("POST /oauth/locationToken after the change that added refresh_token (fixtures README, note 3)", async () => {
    const token = await companyToken("co-lt-rt");
    crm.locationTokens.withRefresh = true;
    try {
      const answer = await post("/oauth/locationToken", JSON.stringify({ companyId: "company-1", locationId: "loc-4" }), {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
      });
      expect(differences(answer, { ...highlevelFixture("oauth-location-token"), refresh_token: "documented as a string" })).toEqual([]);
    } finally {
      crm.locationTokens.withRefresh = false;
    }
  });

  test("POST /oauth/locationToken without companyId and locationId: 422, as HighLevel validates", async () => {
    const res = await fetch(`${crm.url}/oauth/locationToken`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(422);
  });

  test("GET /oauth/installedLocations: installed-locations.json", async () => {
    crm.installed.ids = ["loc-1", "loc-2"];
    const token = await companyToken("co-il");
    const res = await fetch(`${crm.url}/oauth/installedLocations?companyId=company-1&appId=app&isInstalled=true`, {
      headers: { authorization: `Bearer ${token}`, version: "2021-07-28" },
    });
    expect(res.status).toBe(200);
    expect(differences(await res.json(), highlevelFixture("installed-locations"))).toEqual([]);
  });

  test("PUT /conversations/messages/{id}/status: message-status-200.json", async () => {
    const res = await fetch(`${crm.url}/conversations/messages/msg-1/status`, {
      method: "PUT",
      body: JSON.stringify(highlevelFixture("message-status-put")),
      headers: { authorization: "Bearer at", version: "2021-04-15", "content-type": "application/json" },
    });
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(differences(answer, highlevelFixture("message-status-200"))).toEqual([]);
    expect(answer).toMatchObject({ messageId: "msg-1", status: "failed" });
  });

  test("POST /contacts/upsert, the documented request: contacts-upsert-200.json, the same contact again", async () => {
    const headers = { authorization: "Bearer at", version: "2021-07-28", "content-type": "application/json" };
    const request = highlevelFixture("contacts-upsert-post");
    const first = (await post("/contacts/upsert", JSON.stringify(request), headers)) as { new: boolean; contact: { id: string } };
    expect(differences(first, highlevelFixture("contacts-upsert-200"))).toEqual([]);
    const again = (await post("/contacts/upsert", JSON.stringify({ locationId: request.locationId, phone: request.phone }), headers)) as typeof first;
    expect(again).toMatchObject({ new: false, contact: { id: first.contact.id } });
    expect(crm.replies.contacts).toMatchObject([{ phone: request.phone, smsDnd: "active" }]);
  });

  test("POST /conversations/messages/inbound: inbound-message-200.json; without conversationProviderId, 201 empty and dropped", async () => {
    const headers = { authorization: "Bearer at", version: "2021-04-15", "content-type": "application/json" };
    const request = highlevelFixture("inbound-message-post");
    expect(differences(await post("/conversations/messages/inbound", JSON.stringify(request), headers), highlevelFixture("inbound-message-200"))).toEqual([]);
    const { conversationProviderId: _, ...without } = request;
    const res = await fetch(`${crm.url}/conversations/messages/inbound`, { method: "POST", body: JSON.stringify(without), headers });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe("");
    expect(crm.replies.inbound.map((m) => m.messageId !== "")).toEqual([true, false]);
  });

  test("GET /conversations/search and GET /conversations/{id}/messages: conversations-search-200.json, conversation-messages-200.json, flat or wrapped (note 14)", async () => {
    const headers = { authorization: "Bearer at", version: "2021-04-15", "content-type": "application/json" };
    const contact = (await post("/contacts/upsert", JSON.stringify({ locationId: "loc-look", phone: "+639170000001" }), headers)) as { contact: { id: string } };
    const contactId = contact.contact.id;
    const sent = { ...highlevelFixture("inbound-message-post"), conversationId: undefined, contactId, message: "found me", date: "2026-11-24T00:00:00.000Z" };
    const taken = (await post("/conversations/messages/inbound", JSON.stringify(sent), headers)) as { messageId: string };
    const get = async (path: string) => {
      const res = await fetch(`${crm.url}${path}`, { headers });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    const search = await get(`/conversations/search?locationId=loc-look&contactId=${contactId}`);
    expect(differences(search, highlevelFixture("conversations-search-200"))).toEqual([]);
    const [conversation] = search.conversations as { id: string }[];
    const flat = await get(`/conversations/${conversation?.id}/messages?limit=100&type=TYPE_SMS`);
    expect(differences(flat, highlevelFixture("conversation-messages-200"))).toEqual([]);
    expect(flat.messages).toMatchObject([{ id: taken.messageId, direction: "inbound", body: "found me", contactId, dateAdded: sent.date }]);
    crm.replies.state.wrapped = true;
    try {
      const wrapped = await get(`/conversations/${conversation?.id}/messages?limit=100&type=TYPE_SMS`);
      expect(Object.keys(wrapped).sort()).toEqual(["messages", "traceId"]);
      expect(wrapped.messages).toEqual(flat);
    } finally {
      crm.replies.state.wrapped = false;
    }
    expect(await get("/conversations/search?locationId=loc-look&contactId=nobody")).toEqual({ conversations: [], total: 0 });
  });
});

describe("differences: how an answer is held to a fixture", () => {
  test.each([
    ["the same shape", { a: "x", b: [1] }, { a: "y", b: [2, 3] }, []],
    ["a field the fixture lacks", { a: "x", extra: null }, { a: "y" }, ["extra: not documented"]],
    ["a documented field missing", {}, { a: "y" }, ["a: missing"]],
    ["another type", { a: 1 }, { a: "1" }, ["a: number, documented string"]],
    ["null for an object", { a: null }, { a: { b: 1 } }, ["a: null, documented object"]],
    ["an array element of another shape", { a: [{ b: 1 }] }, { a: [{ b: "1" }] }, ["a[0].b: number, documented string"]],
  ])("%s", (_, actual, documented, expected) => {
    expect(differences(actual, documented)).toEqual(expected);
  });
});

/** Where `actual` departs from the documented example's shape: field names and JSON types. */
function differences(actual: unknown, documented: unknown, at = ""): string[] {
  const kind = typeOf(actual);
  const want = typeOf(documented);
  if (kind !== want) return [`${at}: ${kind}, documented ${want}`];
  if (Array.isArray(actual) && Array.isArray(documented)) {
    // Every element is held to the documented first one (an empty array has none to hold).
    if (documented.length === 0) return [];
    return actual.flatMap((element, i) => differences(element, documented[0], `${at}[${i}]`));
  }
  if (kind !== "object") return [];
  const got = actual as Record<string, unknown>;
  const doc = documented as Record<string, unknown>;
  const name = (key: string) => (at ? `${at}.${key}` : key);
  return [
    ...Object.keys(got).filter((k) => !(k in doc)).map((k) => `${name(k)}: not documented`),
    ...Object.keys(doc).filter((k) => !(k in got)).map((k) => `${name(k)}: missing`),
    ...Object.keys(doc).filter((k) => k in got).flatMap((k) => differences(got[k], doc[k], name(k))),
  ];
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}
