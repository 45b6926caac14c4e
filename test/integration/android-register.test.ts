import { afterEach, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { bridgePerTest, type Bridge } from "../helpers/bridge.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, SIGNING_KEY, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";
import { commandEnv } from "../helpers/test-store.ts";

// `bridge android register LOC` and doctor's check of each phone, against the fake phone.
const startWith = bridgePerTest();
const phones: FakePhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.close();
});

async function start(): Promise<{ bridge: Bridge; phone: FakePhone }> {
  const bridge = await startWith({ worker: false }, "loc-1");
  const phone = await startFakePhone();
  phones.push(phone);
  const settings = { gateway: "android" as const, url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: SIGNING_KEY };
  await bridge.core.phones.set("loc-1", settings, Date.now());
  return { bridge, phone };
}

function cli(bridge: Bridge, env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), env: commandEnv({ ...bridge.env, ...env }) };
  return run(argv, io).then((code) => ({ code, out: out.join(""), err: err.join("") }));
}

const HTTPS = { BASE_URL: "https://bridge.example.com" };

test("a BASE_URL that is not HTTPS is refused, saying what to do; the phone is not asked", async () => {
  const { bridge, phone } = await start();
  const result = await cli(bridge, { BASE_URL: "http://bridge.example.com" }, "android", "register", "loc-1");
  expect(result.code).toBe(1);
  expect(result.err).toContain("the phone posts its webhooks only over HTTPS");
  expect(result.err).toContain("run `bridge android register` again");
  expect(phone.received("POST /webhooks")).toEqual([]);
});

test("a BASE_URL of http://127.0.0.1:PORT, the phone's own loopback, is the one plain-HTTP address registered", async () => {
  const { bridge, phone } = await start();
  const local = await cli(bridge, { BASE_URL: "http://127.0.0.1:3000" }, "android", "register", "loc-1");
  expect(local).toMatchObject({ code: 0, err: "" });
  expect(local.out).toContain("registered sms:received -> http://127.0.0.1:3000/webhooks/android");
  const lan = await cli(bridge, { BASE_URL: "http://192.168.1.10:3000" }, "android", "register", "loc-1");
  expect(lan.code).toBe(1);
  expect(lan.err).toContain("BASE_URL is http://192.168.1.10:3000: the phone posts its webhooks only over HTTPS");
  expect(phone.received("POST /webhooks")).toHaveLength(4);
});

test("registers the four events under stable ids: a second run replaces them", async () => {
  const { bridge, phone } = await start();
  const first = await cli(bridge, HTTPS, "android", "register", "loc-1");
  expect(first.err).toBe("");
  expect(first.code).toBe(0);
  expect(first.out).toContain(`registered sms:received -> https://bridge.example.com/webhooks/android (id bridge-sms-received) on phone ${DEVICE}\n`);
  expect((await cli(bridge, HTTPS, "android", "register", "loc-1")).code).toBe(0);
  expect([...phone.webhooks.values()]).toEqual(
    ["sms:received", "sms:sent", "sms:delivered", "sms:failed"].map((event) => ({
      id: `bridge-${event.replace(":", "-")}`,
      url: "https://bridge.example.com/webhooks/android",
      event,
      deviceId: DEVICE,
    })),
  );
});

test("a location that does not send through a phone: a clear error", async () => {
  const { bridge } = await start();
  await bridge.seed("loc-2");
  const result = await cli(bridge, HTTPS, "android", "register", "loc-2");
  expect(result.code).toBe(1);
  expect(result.err).toContain("location loc-2 does not send through a phone");
});

test("doctor: the phone answers, and says when bridge's webhooks are not registered on it", async () => {
  const { bridge, phone } = await start();
  const line = (out: string) => out.split("\n").find((l) => l.includes(`phone ${DEVICE} (loc-1)`));
  // No Cast key anywhere: a location on a phone needs none, and doctor does not ask it of one.
  const before = await cli(bridge, { ...HTTPS, SMS_API_KEY: "" }, "doctor");
  expect(before.out).not.toContain("sender ID loc-1");
  expect(line(before.out)).toMatch(/^warn {2}phone .*: answers at .* \(health pass\), but .* is not registered for sms:received, sms:sent, sms:delivered, sms:failed: run `bridge android register loc-1`$/);
  await cli(bridge, HTTPS, "android", "register", "loc-1");
  expect(line((await cli(bridge, HTTPS, "doctor")).out)).toMatch(/^ok {4}phone .*webhooks registered$/);
  await bridge.core.phones.set("loc-1", { signingKey: "" }, Date.now());
  expect(line((await cli(bridge, HTTPS, "doctor")).out)).toContain("loc-1 has no signing key, so its webhooks are refused");
  await phone.close();
  expect(line((await cli(bridge, HTTPS, "doctor")).out)).toMatch(/^fail {2}phone .*phone unreachable/);
});
