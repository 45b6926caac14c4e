import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, runWithStdin, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

// dist/bridge with a location on a phone: set up from the command line, registered, sending, settled by the phone's webhook.
let e2e: E2E;
let server: Serve;
let phone: FakePhone;

beforeAll(async () => {
  e2e = await e2eSetup("android", { BASE_URL: "https://bridge.example.com" });
  server = await startServe(e2e.env, e2e.dir);
  phone = await startFakePhone();
  e2e.crm.grantLocation("code-android", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-android`)).status).toBe(200);
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  if (server) await exited(server.child);
  await phone?.close();
  await e2e?.close();
});

/** `dist/bridge …` with `stdin` written to its standard input. */
function withStdin(stdin: string, ...args: string[]) {
  return runWithStdin(e2e.env, e2e.dir, stdin, args);
}

test("config set --gateway android, the secrets from standard input, shown only as set", async () => {
  const set = await withStdin(
    `${PHONE_PASSWORD}\n`,
    ...["config", "set", "loc-1", "--gateway", "android", "--android-url", phone.url, "--android-user", PHONE_USER],
    ...["--android-device", DEVICE, "--android-password", "-", "--json"],
  );
  expect(set.err).toBe("");
  expect(JSON.parse(set.out)).toMatchObject({ gateway: "android", android_url: phone.url, android_device: DEVICE, android_password: "(set)", android_signing_key: "" });
  const key = await withStdin(`${SIGNING_KEY}\n`, "config", "set", "loc-1", "--android-signing-key", "-", "--json");
  expect(JSON.parse(key.out)).toMatchObject({ android_signing_key: "(set)" });
  const shown = await runBridge(e2e.env, e2e.dir, ["config", "get", "loc-1"]);
  expect(shown.stdout).not.toContain(PHONE_PASSWORD);
  expect(shown.stdout).not.toContain(SIGNING_KEY);
});

test("android register puts BASE_URL/webhooks/android on the phone; a non-HTTPS BASE_URL is refused", async () => {
  const refused = await runBridge({ ...e2e.env, BASE_URL: "http://bridge.example.com" }, e2e.dir, ["android", "register", "loc-1"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("only over HTTPS");
  const registered = await runBridge(e2e.env, e2e.dir, ["android", "register", "loc-1"]);
  expect(registered.code).toBe(0);
  expect([...phone.webhooks.values()].map((h) => `${h.event} ${h.url}`)).toEqual(
    ["sms:received", "sms:sent", "sms:delivered", "sms:failed"].map((e) => `${e} https://bridge.example.com/webhooks/android`),
  );
});

test("serve sends through the phone, and the phone's signed sms:delivered settles it", async () => {
  expect((await e2e.webhook(server.url, outbound("m-1"))).status).toBe(200);
  const sent = await waitFor(() => [...phone.messages.values()][0], 10_000);
  expect(sent).toMatchObject({ deviceId: DEVICE, to: "+639171234567", text: "hello m-1", state: "Pending" });
  const forged = await phone.post(`${server.url}/webhooks/android`, phone.envelope("sms:delivered", { messageId: sent.id }), { key: "forged" });
  expect(forged.status).toBe(401);
  const res = await phone.post(`${server.url}/webhooks/android`, phone.envelope("sms:delivered", { messageId: sent.id }));
  expect(res.status).toBe(200);
  await waitFor(() => e2e.crm.statusReports().find((r) => r.messageId === "m-1"), 10_000);
  expect(e2e.crm.statusReports().filter((r) => r.messageId === "m-1").map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(e2e.gateway.sent()).toEqual([]);
});
