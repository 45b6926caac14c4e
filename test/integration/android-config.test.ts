import { describe, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { openDb } from "../../src/db/index.ts";
import { bridgePerTest, type Bridge } from "../helpers/bridge.ts";
import { commandEnv, sqliteOnly } from "../helpers/test-store.ts";

// A location's gateway: `bridge config set --gateway android …` and PUT …/config, one code path.
const start = bridgePerTest();
const PHONE = {
  gateway: "android",
  android_url: "http://192.168.1.20:8080",
  android_user: "sms",
  android_password: "pw-0123",
  android_device: "ffffffffceb0b1db0000018e937c815b",
  android_signing_key: "signing-key-0123",
};
const SHOWN = { ...PHONE, android_password: "(set)", android_signing_key: "(set)" };

function put(bridge: Bridge, body: unknown) {
  return bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify(body) });
}

function cli(bridge: Bridge, stdin: string | undefined, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), env: commandEnv({ DATABASE_PATH: bridge.config.databasePath }) };
  if (stdin !== undefined) io.readLine = async () => stdin;
  return run(argv, io).then((code) => ({ code, out: out.join(""), err: err.join("") }));
}

describe("the admin API", () => {
  sqliteOnly("reads the sealed columns from the SQLite file with openDb")("sets a phone: shown without its secrets, stored with them, listed", async () => {
    const bridge = await start({ worker: false, env: { BRIDGE_ENCRYPTION_KEY: "a".repeat(64) } });
    await bridge.install("loc-1");
    const res = await put(bridge, PHONE);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ location_id: "loc-1", sender_id: "", sms_api_key: "", monthly_cap: null, ...SHOWN });
    expect(await bridge.core.phones.get("loc-1")).toMatchObject({ gateway: "android", password: "pw-0123", signingKey: "signing-key-0123" });
    const listed = (await (await bridge.admin("/api/admin/locations")).json()) as { locations: Record<string, unknown>[] };
    expect(listed.locations[0]).toMatchObject(SHOWN);

    // Sealed at rest, like the API keys.
    const db = openDb(bridge.config.databasePath);
    const stored = db.prepare("SELECT android_password, android_signing_key FROM location_gateways").get() as Record<string, string>;
    db.close();
    expect(stored.android_password).toMatch(/^enc:v2:/);
    expect(stored.android_signing_key).toMatch(/^enc:v2:/);
  });

  test.each([
    [{ ...PHONE, android_url: "ftp://phone" }, "android_url must be an http:// or https:// URL"],
    [{ ...PHONE, android_url: "http://u:p@phone:8080" }, "android_url must be an http:// or https:// URL"],
    [{ ...PHONE, android_device: "" }, "android_device may not be empty"],
    [{ ...PHONE, android_user: "" }, "android_user may not be empty"],
    [{ ...PHONE, gateway: "sms" }, 'gateway must be "cast" or "android"'],
    [{ gateway: "android", android_url: PHONE.android_url }, "gateway android needs the phone's --android-user, --android-password, --android-device"],
  ])("refuses %j: 400, nothing stored", async (body, said) => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const res = await put(bridge, body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain(said);
    expect(await bridge.core.phones.describe("loc-1")).toBeUndefined();
  });

  test("a location never set shows as before (Cast)", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    expect(await (await bridge.admin("/api/admin/locations/loc-1/config")).json()).toEqual({ location_id: "loc-1", sender_id: "", sms_api_key: "", monthly_cap: null });
  });
});

describe("bridge config set", () => {
  test("--android-password - reads the password from standard input; config get shows it as set", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const set = await cli(
      bridge,
      "pw-from-stdin",
      ...["config", "set", "loc-1", "--gateway", "android", "--android-url", PHONE.android_url, "--android-user", "sms"],
      ...["--android-password", "-", "--android-device", PHONE.android_device],
    );
    expect(set.err).toBe("");
    expect(set.code).toBe(0);
    expect(set.out).toContain("gateway      android\n");
    expect(set.out).toContain("android_password (set)\n");
    expect(set.out).not.toContain("pw-from-stdin");
    expect((await bridge.core.phones.get("loc-1")).password).toBe("pw-from-stdin");

    const key = await cli(bridge, "key-from-stdin", "config", "set", "loc-1", "--android-signing-key", "-", "--json");
    expect(JSON.parse(key.out)).toMatchObject({ gateway: "android", android_signing_key: "(set)", android_password: "(set)" });
    expect((await bridge.core.phones.get("loc-1")).signingKey).toBe("key-from-stdin");
  });

  test("two secrets from standard input in one command are refused, nothing stored", async () => {
    const bridge = await start({ worker: false });
    await bridge.install("loc-1");
    const result = await cli(bridge, "x", "config", "set", "loc-1", "--android-password", "-", "--android-signing-key", "-");
    expect(result.code).toBe(2);
    expect(result.err).toContain("only one secret can be read from standard input per command");
    expect(await bridge.core.phones.describe("loc-1")).toBeUndefined();
  });
});

test("removing a location removes its phone settings with it", async () => {
  const bridge = await start({ worker: false });
  await bridge.install("loc-1");
  expect((await put(bridge, PHONE)).status).toBe(200);
  const removed = await cli(bridge, undefined, "locations", "remove", "loc-1", "--yes");
  expect(removed.code).toBe(0);
  expect(await bridge.core.phones.describe("loc-1")).toBeUndefined();
  expect(await bridge.core.phones.byDevice(PHONE.android_device)).toEqual([]);
});

test("status does not call a location on a phone pending for want of a Cast key", async () => {
  const bridge = await start({ worker: false, env: { ALLOWED_COMPANY_IDS: "" } });
  await bridge.install("loc-1");
  const attention = async () => ((await (await bridge.admin("/api/admin/status")).json()) as { needs_attention: unknown[] }).needs_attention;
  expect(await attention()).toEqual([{ location_id: "loc-1", reason: "pending: not approved to use SMS_API_KEY and has no key of its own" }]);
  expect((await put(bridge, PHONE)).status).toBe(200);
  expect(await attention()).toEqual([]);
});
