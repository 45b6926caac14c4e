import { expect, test } from "vitest";
import { bridgePerTest, GLOBAL_SMS_KEY, type Bridge } from "../helpers/bridge.ts";
import { runCli } from "../helpers/cli.ts";
import { SENDER_IDS } from "../helpers/fake-gateway.ts";

// `bridge config set LOC --sender-id X` and PUT …/config check X against the approved SMS
// sender IDs of the key the location sends with (src/core/installs/sender-check.ts).
const start = bridgePerTest();
const OWN_KEY = "own-key-of-loc-1-0123456789";
const NEW_KEY = "new-key-of-loc-1-9876543210";
const APPROVED = [
  { sender_id: "MYAPP", label: "Main app sender", channel: "sms" as const },
  { sender_id: "VERIFY", label: "OTP sender", channel: "sms" as const },
  { sender_id: "ESIM1", label: "SIM gateway sender", channel: "sim" as const },
];

async function started(env: Record<string, string> = {}): Promise<Bridge> {
  const bridge = await start({ env }, "loc-1", "loc-2");
  bridge.gateway.senderIds(APPROVED);
  return bridge;
}

const askedWith = (bridge: Bridge) => bridge.gateway.received(SENDER_IDS).map((r) => r.headers["x-api-key"]);
const put = (bridge: Bridge, body: unknown) => bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify(body) });

test("config set refuses a sender ID the location's own key has not approved (exit 1, naming the approved ones); nothing changes", async () => {
  const bridge = await started();
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY, senderId: "MYAPP" }, Date.now());

  const refused = await runCli(bridge, "config", "set", "loc-1", "--sender-id", "ESIM1");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("sender ID ESIM1 is not approved for this API key; approved: MYAPP, VERIFY");
  expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("MYAPP");
  expect(askedWith(bridge)).toEqual([OWN_KEY]);

  const accepted = await runCli(bridge, "config", "set", "loc-1", "--sender-id", "VERIFY");
  expect(accepted).toMatchObject({ code: 0, stderr: "" });
  expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("VERIFY");
});

test("config set checks a sender ID against a new key given in the same command, and keeps neither when refused", async () => {
  const bridge = await started();
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OWN_KEY }, Date.now());

  const refused = await runCli(bridge, "config", "set", "loc-1", "--sms-api-key", NEW_KEY, "--sender-id", "NOPE");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("sender ID NOPE is not approved for this API key; approved: MYAPP, VERIFY");
  expect(askedWith(bridge)).toEqual([NEW_KEY]);
  expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ smsApiKey: OWN_KEY, senderId: "" });
});

test("config set checks an approved location's sender ID against SMS_API_KEY when it has no key of its own", async () => {
  const bridge = await started();
  const refused = await runCli(bridge, "config", "set", "loc-1", "--sender-id", "BRAND");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("approved: MYAPP, VERIFY");
  expect(askedWith(bridge)).toEqual([GLOBAL_SMS_KEY]);
  expect((await runCli(bridge, "config", "set", "loc-1", "--sender-id", "MYAPP")).code).toBe(0);
});

test("config set saves a sender ID with a warning when Cast cannot be reached to check it", async () => {
  const bridge = await started();
  const offline = { env: { ...bridge.env, SMS_API_URL: "http://127.0.0.1:9" } };
  const result = await runCli(offline, "config", "set", "loc-1", "--sender-id", "BRAND");
  expect(result.code).toBe(0);
  expect(result.stderr).toMatch(/^bridge: warning: sender ID BRAND saved unchecked: Cast could not list the sender IDs approved on key global-sms-k\.\.\. \(.+\); `bridge doctor` checks it later\n$/);
  expect(result.stderr).not.toContain(GLOBAL_SMS_KEY);
  expect((await bridge.core.tokens.get("loc-1"))?.senderId).toBe("BRAND");
});

test("the admin API's PUT …/config refuses an unapproved sender ID with 400, by the same rule", async () => {
  const bridge = await started();
  const refused = await put(bridge, { sender_id: "ESIM1", sms_api_key: NEW_KEY });
  expect(refused.status).toBe(400);
  expect(await refused.json()).toEqual({ error: "sender ID ESIM1 is not approved for this API key; approved: MYAPP, VERIFY" });
  expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ smsApiKey: "", senderId: "" });

  const accepted = await put(bridge, { sender_id: "MYAPP", sms_api_key: NEW_KEY });
  expect(accepted.status).toBe(200);
  expect(await accepted.json()).toMatchObject({ sender_id: "MYAPP", sms_api_key: "new-key-of-l..." });
  expect(askedWith(bridge)).toEqual([NEW_KEY, NEW_KEY]);
});

test("a sender ID cleared back to the default is not checked, nor is one for an unapproved location without a key (saved with a warning)", async () => {
  const bridge = await started();
  expect((await put(bridge, { sender_id: "" })).status).toBe(200);
  await bridge.core.tokens.setApproved("loc-2", false, Date.now());
  const result = await runCli(bridge, "config", "set", "loc-2", "--sender-id", "BRAND");
  expect(result.code).toBe(0);
  expect(result.stderr).toContain("sender ID BRAND saved unchecked: the location has no API key to send with yet");
  expect(askedWith(bridge)).toEqual([]);
});
