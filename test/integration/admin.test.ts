import { describe, expect, test } from "vitest";
import { ADMIN_KEY, GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** The three admin endpoints, each with a body to send where it takes one. */
const ENDPOINTS = [
  { method: "GET", path: "/api/admin/locations" },
  { method: "GET", path: "/api/admin/locations/loc-1/config" },
  { method: "PUT", path: "/api/admin/locations/loc-1/config", body: JSON.stringify({ sender_id: "HACKED", sms_api_key: "stolen" }) },
];

/** A request with exactly this Authorization header (or none). */
function sendAs(bridge: Bridge, authorization: string | undefined, request: { method: string; path: string; body?: string }) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  return bridge.fetch(request.path, { method: request.method, headers, body: request.body });
}

function put(bridge: Bridge, locationId: string, body: unknown, raw?: string) {
  return bridge.admin(`/api/admin/locations/${locationId}/config`, { method: "PUT", body: raw ?? JSON.stringify(body) });
}

describe("admin auth", () => {
  const start = bridgePerTest();

  const credentials = [
    { name: "no Authorization", authorization: undefined },
    { name: "a wrong bearer", authorization: "Bearer not-the-admin-key" },
    { name: "the key with one character more", authorization: `Bearer ${ADMIN_KEY}x` },
    { name: "a prefix of the key", authorization: `Bearer ${ADMIN_KEY.slice(0, -1)}` },
    { name: "an empty bearer", authorization: "Bearer " },
    { name: "the key without a scheme", authorization: ADMIN_KEY },
    { name: "Basic with the key", authorization: `Basic ${Buffer.from(`admin:${ADMIN_KEY}`).toString("base64")}` },
    { name: "Basic with the raw key", authorization: `Basic ${ADMIN_KEY}` },
  ];
  const cases = ENDPOINTS.flatMap((endpoint) => credentials.map((c) => ({ ...endpoint, ...c })));

  test.each(cases)("$method $path with $name: 401 unauthorized, WWW-Authenticate: Bearer", async ({ method, path, body, authorization }) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const before = await bridge.core.tokens.get("loc-1");
    const res = await sendAs(bridge, authorization, { method, path, body });

    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await res.json()).toEqual({ error: "unauthorized" });
    expect(await bridge.core.tokens.get("loc-1")).toEqual(before);
  });

  test.each(ENDPOINTS)("$method $path with the right bearer is not refused", async ({ method, path }) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const res = await bridge.admin(path, { method, body: method === "PUT" ? "{}" : undefined });
    expect(res.status).toBe(200);
  });

  test("the scheme name is case-insensitive", async () => {
    const bridge = await start({ worker: false });
    const res = await bridge.fetch("/api/admin/locations", { headers: { authorization: `bearer ${ADMIN_KEY}` } });
    expect(res.status).toBe(200);
  });
});

describe("admin API during a key rotation (INBOUND_API_KEY=old,new)", () => {
  const OLD = "old-admin-key-0123456789abcdef";
  const NEW = "new-admin-key-fedcba9876543210";
  const start = bridgePerTest();

  test.each([
    { name: "the old key", authorization: `Bearer ${OLD}`, status: 200 },
    { name: "the new key", authorization: `Bearer ${NEW}`, status: 200 },
    { name: "both, as written in the variable", authorization: `Bearer ${OLD},${NEW}`, status: 401 },
    { name: "the key of the other tests", authorization: `Bearer ${ADMIN_KEY}`, status: 401 },
  ])("$name gets $status", async ({ authorization, status }) => {
    const bridge = await start({ worker: false, env: { INBOUND_API_KEY: `${OLD},${NEW}` } });
    const res = await sendAs(bridge, authorization, ENDPOINTS[0]!);
    expect(res.status).toBe(status);
  });
});

describe("admin API with INBOUND_API_KEY unset", () => {
  const start = bridgePerTest();

  test.each(
    ENDPOINTS.flatMap((endpoint) =>
      [undefined, "Bearer ", `Bearer ${ADMIN_KEY}`, "Bearer undefined"].map((authorization) => ({ ...endpoint, authorization })),
    ),
  )("$method $path with authorization $authorization: 503, not open", async ({ method, path, body, authorization }) => {
    const bridge = await start({ worker: false, env: { INBOUND_API_KEY: "" } });
    await bridge.install("loc-1");
    const before = await bridge.core.tokens.get("loc-1");
    const res = await sendAs(bridge, authorization, { method, path, body });

    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(await bridge.core.tokens.get("loc-1")).toEqual(before);
  });
});

describe("GET /api/admin/locations", () => {
  const T0 = Date.parse("2025-03-01T08:00:00.000Z");
  let clock = T0;
  const startWith = bridgePerTest();
  /** A bridge whose clock stands at T0 until the test moves it. */
  const start = () => {
    clock = T0;
    return startWith({ worker: false, now: () => clock });
  };

  test("an empty store lists no locations", async () => {
    const bridge = await start();
    const res = await bridge.admin("/api/admin/locations");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ locations: [] });
  });

  test("lists every installed location with masked key and ISO-8601 UTC times", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    clock += 60_000;
    await bridge.install("loc-2");
    clock += 60_000;
    expect((await put(bridge, "loc-2", { sender_id: "BRIDGE", sms_api_key: "abcdefghijklmnopqrstuvwxyz" })).status).toBe(200);

    const res = await bridge.admin("/api/admin/locations");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const { locations } = (await res.json()) as { locations: Record<string, unknown>[] };
    expect(locations).toHaveLength(2);
    const byId = Object.fromEntries(locations.map((l) => [l.location_id, l]));
    expect(byId["loc-1"]).toMatchObject({
      location_id: "loc-1",
      company_id: "company-1",
      sender_id: "",
      sms_api_key: "",
      installed_at: "2025-03-01T08:00:00.000Z",
      updated_at: "2025-03-01T08:00:00.000Z",
      expires_at: new Date(T0 + 86_399_000).toISOString(),
    });
    expect(byId["loc-2"]).toMatchObject({
      location_id: "loc-2",
      company_id: "company-1",
      sender_id: "BRIDGE",
      sms_api_key: "abcdefghijkl...",
      installed_at: "2025-03-01T08:01:00.000Z",
      updated_at: "2025-03-01T08:02:00.000Z",
      expires_at: new Date(T0 + 60_000 + 86_399_000).toISOString(),
    });
    for (const location of locations) {
      for (const field of ["expires_at", "installed_at", "updated_at"]) expect(location[field]).toMatch(ISO_UTC);
    }
  });

  test("the response never carries an access token, a refresh token or a full API key", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await bridge.install("loc-2");
    await put(bridge, "loc-1", { sms_api_key: "secret-gateway-key-0123456789" });

    const res = await bridge.admin("/api/admin/locations");
    expect(res.status).toBe(200);
    const text = await res.text();
    const records = await bridge.core.tokens.list();
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect(record.accessToken).not.toBe("");
      expect(text).not.toContain(record.accessToken);
      expect(text).not.toContain(record.refreshToken);
    }
    expect(text).not.toContain("secret-gateway-key-0123456789");
    expect(text).not.toMatch(/access_token|refresh_token|accessToken|refreshToken/);
  });
});

describe("GET /api/admin/locations/{id}/config", () => {
  const start = bridgePerTest();

  test.each([
    { key: "abcdefghijklmnopqrstuvwxyz", masked: "abcdefghijkl..." },
    { key: "k-123456789012345", masked: "k-1234567890..." },
    { key: "abcdefghijkl", masked: "abcdefghijkl..." },
    { key: "short", masked: "short..." },
    { key: "", masked: "" },
  ])("sms_api_key $key is shown as $masked", async ({ key, masked }) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    await bridge.core.tokens.setConfig("loc-1", { senderId: "CASTPH", smsApiKey: key }, Date.now());

    const res = await bridge.admin("/api/admin/locations/loc-1/config");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "CASTPH", sms_api_key: masked, monthly_cap: null });
  });

  test("a location with nothing set shows empty values", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const res = await bridge.admin("/api/admin/locations/loc-1/config");
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "", sms_api_key: "", monthly_cap: null });
  });
});

describe("PUT /api/admin/locations/{id}/config", () => {
  const start = bridgePerTest();

  test("sets sender_id and sms_api_key: 200 masked, stored unmasked, and the next SMS uses them", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const res = await put(bridge, "loc-1", { sender_id: "BRIDGE", sms_api_key: "k-123456789012345" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "BRIDGE", sms_api_key: "k-1234567890...", monthly_cap: null });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ senderId: "BRIDGE", smsApiKey: "k-123456789012345" });

    const get = await bridge.admin("/api/admin/locations/loc-1/config");
    expect(await get.json()).toEqual({ location_id: "loc-1", sender_id: "BRIDGE", sms_api_key: "k-1234567890...", monthly_cap: null });

    expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
    await waitFor(() => bridge.crm.statusReports().length === 1);
    expect(bridge.gateway.sent()).toEqual([{ apiKey: "k-123456789012345", to: "09171234567", message: "hello m-1", sender_id: "BRIDGE" }]);
  });

  test("an absent field keeps its value", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.gateway.senderIds([{ sender_id: "BRIDGE", label: "", channel: "sms" }, { sender_id: "OTHER", label: "", channel: "sms" }]);
    await put(bridge, "loc-1", { sender_id: "BRIDGE", sms_api_key: "k-123456789012345" });

    let res = await put(bridge, "loc-1", { sender_id: "OTHER" });
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "OTHER", sms_api_key: "k-1234567890...", monthly_cap: null });
    res = await put(bridge, "loc-1", { sms_api_key: "k-999999999999999" });
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "OTHER", sms_api_key: "k-9999999999...", monthly_cap: null });
    res = await put(bridge, "loc-1", {});
    expect(res.status).toBe(200);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ senderId: "OTHER", smsApiKey: "k-999999999999999" });
  });

  test('"" clears both back to the global defaults: the next SMS uses SMS_API_KEY and no sender_id', async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await put(bridge, "loc-1", { sender_id: "BRIDGE", sms_api_key: "k-123456789012345" });

    const res = await put(bridge, "loc-1", { sender_id: "", sms_api_key: "" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "", sms_api_key: "", monthly_cap: null });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ senderId: "", smsApiKey: "" });

    expect((await bridge.webhook(outbound("m-2"))).status).toBe(200);
    await waitFor(() => bridge.crm.statusReports().length === 1);
    expect(bridge.gateway.sent()).toEqual([{ apiKey: GLOBAL_SMS_KEY, to: "09171234567", message: "hello m-2" }]);
  });

  test.each(["ABCDEFGHIJK", "My Shop.PH", "a_b-c", "7", "ACME INC."])("sender_id %j (11 characters at most, inner spaces and punctuation) is accepted", async (senderId) => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.gateway.senderIds([{ sender_id: senderId, label: "", channel: "sms" }]);
    const res = await put(bridge, "loc-1", { sender_id: senderId });
    expect(res.status).toBe(200);
    expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe(senderId);
  });

  test.each([
    { name: "not JSON", raw: "sender_id=BRIDGE" },
    { name: "truncated JSON", raw: '{"sender_id": "BRI' },
    { name: "a JSON array", raw: JSON.stringify([{ sender_id: "BRIDGE" }]) },
    { name: "JSON null", raw: "null" },
    { name: "a JSON string", raw: JSON.stringify("BRIDGE") },
    { name: "sender_id a number", raw: JSON.stringify({ sender_id: 12345 }) },
    { name: "sms_api_key a number", raw: JSON.stringify({ sms_api_key: 12345 }) },
    { name: "sender_id null", raw: JSON.stringify({ sender_id: null }) },
    { name: "an unknown field", raw: JSON.stringify({ sender_id: "BRIDGE", senderId: "BRIDGE" }) },
    { name: "sender_id of 21 characters", raw: JSON.stringify({ sender_id: "ABCDEFGHIJKLMNOPQRSTU" }) },
    { name: "sender_id of spaces only", raw: JSON.stringify({ sender_id: "   " }) },
    { name: "sender_id with a leading space", raw: JSON.stringify({ sender_id: " SHOP" }) },
    { name: "sender_id with a trailing space", raw: JSON.stringify({ sender_id: "SHOP " }) },
    { name: "sender_id that looks like an option", raw: JSON.stringify({ sender_id: "--json" }) },
    { name: "sender_id with other punctuation", raw: JSON.stringify({ sender_id: "SHOP!" }) },
    { name: "sms_api_key with a control character", raw: JSON.stringify({ sms_api_key: "abc\u0001def" }) },
    { name: "sms_api_key beyond ASCII (cannot be an HTTP header)", raw: JSON.stringify({ sms_api_key: "ключ-12345678" }) },
    { name: "sms_api_key with a space", raw: JSON.stringify({ sms_api_key: "abc def" }) },
    { name: "a valid field beside an invalid one", raw: JSON.stringify({ sms_api_key: "k-new", sender_id: 1 }) },
  ])("$name: 400 and the store is unchanged", async ({ raw }) => {
    const bridge = await start();
    await bridge.install("loc-1");
    await put(bridge, "loc-1", { sender_id: "BRIDGE", sms_api_key: "k-123456789012345" });
    const before = await bridge.core.tokens.get("loc-1");

    const res = await put(bridge, "loc-1", undefined, raw);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(await bridge.core.tokens.get("loc-1")).toEqual(before);
  });

  test("a body over 1 MiB: 413 and the store is unchanged", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const before = await bridge.core.tokens.get("loc-1");
    const res = await put(bridge, "loc-1", { sms_api_key: "k".repeat(1.5 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(await bridge.core.tokens.get("loc-1")).toEqual(before);
  });
});

describe("unknown locations and paths", () => {
  const start = bridgePerTest();

  test.each(["GET", "PUT"])("%s config of an unknown location: 404 location not found, nothing created", async (method) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const res = await bridge.admin("/api/admin/locations/loc-404/config", {
      method,
      body: method === "PUT" ? JSON.stringify({ sender_id: "BRIDGE", sms_api_key: "k-123456789012345" }) : undefined,
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "location not found: loc-404" });
    expect(await bridge.core.tokens.get("loc-404")).toBeUndefined();
    expect((await bridge.core.tokens.list()).map((r) => r.locationId)).toEqual(["loc-1"]);
  });

  test("the old PUT …/sender-id endpoint is not part of the interface: 404, nothing changed", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const before = await bridge.core.tokens.get("loc-1");
    const res = await bridge.admin("/api/admin/locations/loc-1/sender-id", { method: "PUT", body: JSON.stringify({ sender_id: "OLD" }) });
    expect(res.status).toBe(404);
    expect(await bridge.core.tokens.get("loc-1")).toEqual(before);
  });

  const encodedIds = [
    { encoded: "loc%20x", decoded: "loc x" },
    { encoded: "loc-1%00", decoded: "loc-1\u0000" },
    { encoded: "%E2%9C%93", decoded: "✓" },
    { encoded: "loc-1%3Fx%3D1", decoded: "loc-1?x=1" },
    { encoded: "%27%20OR%201%3D1%20--", decoded: "' OR 1=1 --" },
    { encoded: "loc%2Fx", decoded: "loc/x" },
    { encoded: "..%2F..%2Fetc%2Fpasswd", decoded: "../../etc/passwd" },
    { encoded: "loc%5Cx", decoded: "loc\\x" },
    { encoded: "loc%252Fx", decoded: "loc%2Fx" },
  ];

  test.each(encodedIds.flatMap((id) => ["GET", "PUT"].map((method) => ({ ...id, method }))))(
    "$method config of $encoded: 400, the id is not an id, the store unchanged",
    async ({ encoded, decoded, method }) => {
      const bridge = await start({ worker: false });
      await bridge.install("loc-1");
      const res = await bridge.admin(`/api/admin/locations/${encoded}/config`, {
        method,
        body: method === "PUT" ? JSON.stringify({ sender_id: "X" }) : undefined,
      });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: string };
      expect(error).toBe("invalid location id: it must be 1-64 letters, digits, '_' or '-'");
      expect(error).not.toContain(decoded);
      expect((await bridge.core.tokens.list()).map((r) => r.locationId)).toEqual(["loc-1"]);
      expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("");
    },
  );

  // Not valid percent-encoding at all: the framework refuses the URL before routing.
  test.each(["%", "%ZZ", "loc%E0%A4%A", "%C0%AF"])("GET and PUT config of malformed escape %s: 400, never 5xx", async (encoded) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    for (const method of ["GET", "PUT"]) {
      const res = await bridge.admin(`/api/admin/locations/${encoded}/config`, {
        method,
        body: method === "PUT" ? JSON.stringify({ sender_id: "X" }) : undefined,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
    expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("");
  });

  test("an unknown id, percent-encoded: a clean 404 naming the decoded id", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const res = await bridge.admin("/api/admin/locations/loc%2D2/config");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "location not found: loc-2" });
  });
});
