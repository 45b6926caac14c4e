import { describe, expect, it } from "vitest";
import { signInPage } from "../helpers/app-api.ts";
import { SHARED_SECRET } from "../helpers/app-payload.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { runCli } from "../helpers/cli.ts";
import { BALANCE, SENDER_IDS } from "../helpers/fake-gateway.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone } from "../helpers/fake-phone.ts";

const start = bridgePerTest();
const env = { CRM_SHARED_SECRET: SHARED_SECRET, SMS_SENDER_ID: "AGENCY" };
const OWN_KEY = "own-key-of-loc-1-0123456789";
/** The operator's Cast account approves more than this location was given. */
const ACCOUNT_SENDERS = [
  { sender_id: "AGENCY", label: "the agency's", channel: "sms" as const },
  { sender_id: "OTHERCLINIC", label: "another tenant's", channel: "sms" as const },
  { sender_id: "GIVEN", label: "", channel: "sms" as const },
];

async function started(options: Parameters<typeof start>[0] = {}): Promise<Bridge> {
  const bridge = await start({ env, ...options });
  await bridge.install("loc-1");
  bridge.gateway.senderIds(ACCOUNT_SENDERS);
  return bridge;
}

const castCalls = (bridge: Bridge, route: string, apiKey?: string) =>
  bridge.gateway.received(route).filter((r) => apiKey === undefined || r.headers["x-api-key"] === apiKey).length;

describe("the settings page as a tenant's view", () => {
  it("on the shared key offers and accepts only the sender IDs the operator gave the location, asking Cast nothing", async () => {
    const bridge = await started();
    expect((await runCli(bridge, "config", "set", "loc-1", "--sender-id", "GIVEN")).code).toBe(0);
    const byTheOperator = castCalls(bridge, SENDER_IDS); // config set checks GIVEN on the shared key
    const api = await signInPage(bridge);
    const offer = await (await api("/sender-ids")).json();
    expect(offer).toEqual({ sender_ids: [{ sender_id: "GIVEN", label: "" }, { sender_id: "AGENCY", label: "" }], source: "agency" });
    const refused = await api("/settings", "PUT", { sender_id: "OTHERCLINIC" });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: "sender ID OTHERCLINIC is not one your agency gave this location; offered: GIVEN, AGENCY" });
    expect((await api("/settings", "PUT", { sender_id: "AGENCY" })).status).toBe(200);
    expect(castCalls(bridge, SENDER_IDS)).toBe(byTheOperator);
  });

  it("removing the own key drops the sender ID checked on it: the location goes back to the agency's, and may choose no other", async () => {
    const bridge = await started();
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY, senderId: "OTHERCLINIC" }, Date.now());
    const api = await signInPage(bridge);
    // Its own key's sender ID is no longer its to use once the agency's key sends for it.
    const refused = await api("/settings", "PUT", { sender_id: "OTHERCLINIC", sms_api_key: "" });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: "sender ID OTHERCLINIC is not one your agency gave this location; offered: AGENCY" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ smsApiKey: OWN_KEY, senderId: "OTHERCLINIC" }); // nothing changed
    const removed = await api("/settings", "PUT", { sms_api_key: "" });
    expect(removed.status).toBe(200);
    expect(await removed.json()).toMatchObject({ key_in_use: "shared", sender_id: "", sender_id_in_use: "AGENCY" });
    expect(await (await api("/sender-ids")).json()).toEqual({ sender_ids: [{ sender_id: "AGENCY", label: "" }], source: "agency" });
  });

  it("on the shared key shows no balance of the operator's account: SMS provided by your agency", async () => {
    const bridge = await started();
    const before = castCalls(bridge, BALANCE);
    const api = await signInPage(bridge);
    expect(await (await api("/balance")).json()).toEqual({
      provided_by: "agency",
      credits: null,
      low: false,
      read_at: null,
      error: null,
      note: "SMS provided by your agency",
    });
    expect(castCalls(bridge, BALANCE)).toBe(before);
  });

  it("with the location's own key reads its balance and sender IDs from Cast once a minute, however often the page asks", async () => {
    let clock = Date.now();
    const bridge = await started({ now: () => clock });
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY }, clock);
    const api = await signInPage(bridge);
    for (let i = 0; i < 5; i++) {
      expect(await (await api("/balance")).json()).toMatchObject({ provided_by: "own_key", credits: 1000 });
      expect(await (await api("/sender-ids")).json()).toMatchObject({ source: "own_key", sender_ids: { length: 3 } });
    }
    expect([castCalls(bridge, BALANCE, OWN_KEY), castCalls(bridge, SENDER_IDS, OWN_KEY)]).toEqual([1, 1]);
    clock += 61_000;
    expect((await api("/sender-ids")).status).toBe(200);
    expect(castCalls(bridge, SENDER_IDS, OWN_KEY)).toBe(2);
  });

  it("a phone location is offered no sender IDs and no Cast balance", async () => {
    const bridge = await started();
    const phone = await startFakePhone();
    try {
      const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
      await bridge.core.phones.set("loc-1", settings, Date.now());
      const api = await signInPage(bridge);
      expect(await (await api("/sender-ids")).json()).toEqual({ sender_ids: [], source: "phone" });
      expect(await (await api("/balance")).json()).toEqual({ provided_by: "phone", credits: null, low: false, read_at: null, error: null });
      // Nor may it save one: it would go out unchecked the day the operator moves it to Cast.
      const refused = await api("/settings", "PUT", { sender_id: "OTHERCLINIC" });
      expect([refused.status, await refused.json()]).toEqual([400, { error: expect.stringContaining("it has no sender ID") }]);
      await phone.close();
      // The phone is asked once a minute at most: its failure shows at the next look after that.
      const health = (await (await api("/phone")).json()) as { status: string; detail: string };
      expect(health).toEqual({ gateway: "android", status: "fail", detail: expect.stringContaining("the phone does not answer") });
      expect(health.detail).not.toMatch(/127\.0\.0\.1|http|ECONNREFUSED/);
    } finally {
      await phone.close();
    }
  });

  it("sends at most 10 test SMS an hour per location: the 11th is 429 with Retry-After and when to try again", async () => {
    let clock = Date.now();
    const bridge = await started({ now: () => clock, worker: false });
    const api = await signInPage(bridge);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await api("/test-sms", "POST", { phone: "09171234567", message: `test ${i}` });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { message_id: string }).message_id);
      clock += 60_000;
    }
    const over = await api("/test-sms", "POST", { phone: "09171234567" });
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("3000");
    expect(await over.json()).toEqual({ error: "at most 10 test SMS an hour: try again in 50 min" });
    // Each is in the location's message log, on the page and in the CLI alike.
    const listed = (await (await api("/messages")).json()) as { messages: { message_id: string }[] };
    expect(listed.messages.map((m) => m.message_id).sort()).toEqual([...ids].sort());
    const cli = await runCli(bridge, "messages", "list", "--location", "loc-1");
    for (const id of ids) expect(cli.stdout).toContain(id);
    clock += 50 * 60_000;
    const later = await signInPage(bridge);
    expect((await later("/test-sms", "POST", { phone: "09171234567" })).status).toBe(200);
  });

  it("shows the location's own usage this month: messages, SMS parts, delivered, failed (a number no phone has fails unsent)", async () => {
    const bridge = await started();
    await bridge.install("loc-2");
    for (const [id, fields] of [
      ["m-1", {}],
      ["m-2", {}],
      ["m-3", { phone: "12345" }],
      ["m-other", { locationId: "loc-2" }],
    ] as const) {
      expect((await bridge.webhook(outbound(id, fields))).status).toBe(200);
    }
    await waitFor(async () => (await Promise.all(["m-1", "m-2", "m-3", "m-other"].map((id) => bridge.core.messages.get(id)))).every((found) => found?.state === "done"));
    const api = await signInPage(bridge);
    const usage = await (await api("/usage")).json();
    expect(usage).toEqual({ month: expect.stringMatching(/^\d{4}-\d{2}$/), messages: 3, parts: 2, delivered: 2, failed: 1, monthly_cap: null, left: null });
  });

  it("shows the location's name", async () => {
    const bridge = await started();
    await bridge.core.tokens.setName("loc-1", "Acme Dental");
    const api = await signInPage(bridge);
    expect(await (await api("/settings")).json()).toMatchObject({ location_id: "loc-1", location_name: "Acme Dental" });
  });

  it("a flood of page calls costs Cast one read and a 429 past 60 a minute, and another location's messages all go out", async () => {
    const bridge = await started();
    const limits = bridge.gateway.limitRequests(30, 50);
    await bridge.install("loc-2");
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY }, Date.now());
    const api = await signInPage(bridge);
    const flood = Promise.all(Array.from({ length: 100 }, () => api("/sender-ids")));
    const webhooks = Array.from({ length: 20 }, (_, i) => bridge.webhook(outbound(`other-${i}`, { locationId: "loc-2" })));
    const answers = await flood;
    for (const res of await Promise.all(webhooks)) expect(res.status).toBe(200);
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const refused = answers.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/^at most 60 calls a minute from this page: try again in \d+ s$/) });
    await waitFor(() => bridge.gateway.sent().filter((s) => s.message.startsWith("hello other-")).length === 20);
    expect(castCalls(bridge, SENDER_IDS)).toBe(1);
    expect(limits.rateLimited).toBe(0);
  });
});
