import { describe, expect, it } from "vitest";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone } from "../helpers/fake-phone.ts";
import { signInPage } from "../helpers/app-api.ts";
import { SHARED_SECRET } from "../helpers/app-payload.ts";
import { bridgePerTest, GLOBAL_SMS_KEY, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

const start = bridgePerTest();
const OWN_KEY = "own-key-of-loc-1-0123456789";
const env = { CRM_SHARED_SECRET: SHARED_SECRET };

/** A bridge with loc-1 installed through OAuth: of the fake CRM's company, the one allowed the shared key. */
async function started(): Promise<Bridge> {
  const bridge = await start({ env });
  await bridge.install("loc-1");
  return bridge;
}

const signIn = signInPage;

describe("the settings page's API", () => {
  it("ends a session whose location is uninstalled meanwhile: 401 at its next call", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    expect((await api("/settings")).status).toBe(200);
    await bridge.core.tokens.markUninstalled("loc-1", Date.now());
    expect((await api("/settings")).status).toBe(401);
  });

  it("shows the location's settings: the shared key while it has none, its own masked once set", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    expect(await (await api("/settings")).json()).toEqual({
      location_id: "loc-1",
      location_name: "",
      gateway: "cast",
      sender_id: "",
      sms_api_key: "",
      key_in_use: "shared",
      sender_id_in_use: "",
    });
    bridge.gateway.senderIds([{ sender_id: "MYAPP", label: "Main app sender", channel: "sms" }]);
    const put = await api("/settings", "PUT", { sender_id: "MYAPP", sms_api_key: "own-key-do-not-show-0123456" });
    expect(put.status).toBe(200);
    const shown = (await put.json()) as Record<string, string>;
    expect(shown).toMatchObject({ sender_id: "MYAPP", key_in_use: "own", sender_id_in_use: "MYAPP" });
    expect(shown.sms_api_key).not.toContain("own-key-do-not-show");
    // The same record the CLI and the admin API read.
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ senderId: "MYAPP", smsApiKey: "own-key-do-not-show-0123456" });
  });

  it("refuses a sender ID the key has not approved, naming the approved ones (400)", async () => {
    const bridge = await started();
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY }, Date.now());
    bridge.gateway.senderIds([
      { sender_id: "MYAPP", label: "Main app sender", channel: "sms" },
      { sender_id: "ESIM1", label: "SIM gateway sender", channel: "sim" },
    ]);
    const api = await signIn(bridge);
    for (const senderId of ["OTHER", "ESIM1"]) {
      const res = await api("/settings", "PUT", { sender_id: senderId });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: `sender ID ${senderId} is not approved for this API key; approved: MYAPP` });
    }
    expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("");
    expect((await api("/settings", "PUT", { sender_id: "" })).status).toBe(200);
  });

  it("refuses a user's writes (403) and lets them read", async () => {
    const bridge = await started();
    const api = await signIn(bridge, { role: "user" });
    expect((await api("/settings")).status).toBe(200);
    const put = await api("/settings", "PUT", { sender_id: "MYAPP" });
    expect(put.status).toBe(403);
    expect(await put.json()).toEqual({ error: "only a location admin may change these settings" });
    expect((await api("/test-sms", "POST", { phone: "09171234567" })).status).toBe(403);
    expect((await api("/optouts", "POST", { phone: "09171234567" })).status).toBe(403);
    expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("");
  });

  it("refuses a bad sender ID and a gateway change with 400, changing nothing", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    expect((await api("/settings", "PUT", { sender_id: "has spaces!" })).status).toBe(400);
    const gateway = await api("/settings", "PUT", { gateway: "android" });
    expect(gateway.status).toBe(400);
    expect(await gateway.json()).toEqual({ error: "only sender_id and sms_api_key can be changed here" });
    expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("");
  });

  it("with the location's own key, lists that key's SMS sender IDs and its balance from Cast", async () => {
    const bridge = await started();
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY }, Date.now());
    bridge.gateway.senderIds([
      { sender_id: "MYAPP", label: "Main app sender", channel: "sms" },
      { sender_id: "ESIM1", label: "SIM gateway sender", channel: "sim" },
    ]);
    const api = await signIn(bridge);
    expect(await (await api("/sender-ids")).json()).toEqual({ sender_ids: [{ sender_id: "MYAPP", label: "Main app sender" }], source: "own_key" });
    expect(await (await api("/balance")).json()).toMatchObject({ provided_by: "own_key", credits: 1000, low: false, error: null });
  });

  it("sends a test SMS through the queue with the location's key: listed, never reported to HighLevel", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    const res = await api("/test-sms", "POST", { phone: "09171234567", message: "hello from the page" });
    expect(res.status).toBe(200);
    const { message_id } = (await res.json()) as { message_id: string };
    await waitFor(() => bridge.gateway.sent().find((s) => s.message === "hello from the page"));
    expect(bridge.gateway.sent()[0]).toMatchObject({ apiKey: GLOBAL_SMS_KEY });
    await waitFor(async () => (await bridge.core.messages.get(message_id))?.state === "done");
    const list = (await (await api("/messages")).json()) as { messages: { message_id: string; status: string }[] };
    expect(list.messages).toMatchObject([{ message_id, status: "delivered" }]);
    const detail = (await (await api(`/messages/${message_id}`)).json()) as { timeline: unknown[] };
    expect(detail.timeline.length).toBeGreaterThan(0);
    expect(bridge.crm.statusReports()).toEqual([]);
  });

  it("shows only the session's own location's messages", async () => {
    const bridge = await start({ env }, "loc-2");
    await bridge.install("loc-1");
    expect((await bridge.webhook(outbound("msg-of-loc-2", { locationId: "loc-2" }))).status).toBe(200);
    const api = await signIn(bridge);
    const list = (await (await api("/messages")).json()) as { messages: unknown[] };
    expect(list.messages).toEqual([]);
    expect((await api("/messages/msg-of-loc-2")).status).toBe(404);
    for (const bad of ["%E0%A4%A", "a%20b"]) expect((await api(`/messages/${bad}`)).status).toBe(400);
  });

  it("tells a phone location whether its phone answers, never its address, and a Cast location that it has none", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    expect(await (await api("/phone")).json()).toEqual({ gateway: "cast" });
    const phone = await startFakePhone();
    try {
      const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
      expect(await bridge.core.phones.set("loc-1", settings, Date.now())).toBe(true);
      const health = (await (await api("/phone")).json()) as { gateway: string; status: string; detail: string };
      expect(health).toMatchObject({ gateway: "android", status: "warn" });
      expect(health.detail).toContain("the phone answers");
      expect(JSON.stringify(health)).not.toMatch(/127\.0\.0\.1|http:|:\d{2,5}\b/);
    } finally {
      await phone.close();
    }
  });

  it("adds, lists and removes an opt-out of the location, the page's recorded as a location admin's", async () => {
    const bridge = await started();
    const api = await signIn(bridge);
    expect(await (await api("/optouts", "POST", { phone: "09171234567" })).json()).toMatchObject({ added: true, phone: "0917***4567" });
    expect(await (await api("/optouts")).json()).toMatchObject({ opt_outs: [{ phone: "0917***4567", by: "page" }] });
    const listed = await bridge.admin("/api/admin/locations/loc-1/optouts");
    expect(await listed.json()).toMatchObject({ opt_outs: [{ by: "page" }] });
    expect(await (await api("/optouts", "DELETE", { phone: "+639171234567" })).json()).toMatchObject({ removed: true });
    expect(await (await api("/optouts")).json()).toMatchObject({ opt_outs: [] });
  });
});
