import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import { expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import { loadConfig } from "../../src/core/config.ts";
import { createCore } from "../../src/core/index.ts";
import { createLogger } from "../../src/core/log.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { openDb } from "../../src/db/index.ts";
import { checkSealed } from "../../src/db/key-check.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { sealV1 } from "../helpers/sealer.ts";
import { captureStream } from "../helpers/stream.ts";

const KEY = randomBytes(32).toString("hex");
const start = bridgePerTest();

test("with BRIDGE_ENCRYPTION_KEY, tokens and API keys are sealed on disk and work as before", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "sealed-api-key-123456" }, Date.now());
  expect((await bridge.webhook(outbound("e-1"))).status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().length === 1);
  expect(bridge.gateway.sent()[0]?.apiKey).toBe("sealed-api-key-123456");

  const raw = onDiskOf(bridge, "loc-1");
  const record = (await bridge.core.tokens.get("loc-1"))!;
  for (const value of Object.values(raw)) expect(value).toMatch(/^enc:v2:/);
  const onDisk = JSON.stringify(raw);
  for (const secret of [record.accessToken, record.refreshToken, "sealed-api-key-123456"]) expect(onDisk).not.toContain(secret);
});

test("a missing or wrong key is a clear error, not garbage tokens", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  const db = openDb(bridge.config.databasePath);
  try {
    expect(() => checkSealed(db, createSealer(undefined))).toThrow("the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY");
    const wrong = createLocationRegistry(db, createSealer(randomBytes(32)));
    expect(() => checkSealed(db, createSealer(randomBytes(32)))).toThrow("BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");
    expect(() => wrong.get("loc-1")).toThrow("is not the key");
  } finally {
    db.close();
  }
});

test("a database whose only sealed secret is a location's API key is refused without the key too", async () => {
  const bridge = await start(); // tokens stored plain
  await bridge.install("loc-1");
  const db = openDb(bridge.config.databasePath);
  try {
    createLocationRegistry(db, createSealer(Buffer.from(KEY, "hex"))).setConfig("loc-1", { smsApiKey: "sealed-api-key-123456" }, Date.now());
    expect(() => checkSealed(db, createSealer(undefined))).toThrow("the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY");
    expect(() => checkSealed(db, createSealer(randomBytes(32)))).toThrow("is not the key");
    expect(() => checkSealed(db, createSealer(Buffer.from(KEY, "hex")))).not.toThrow();
  } finally {
    db.close();
  }
});

test("one value sealed with another key: the start check names it and passes, the listing and status go on", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  await bridge.install("loc-2");
  const db = openDb(bridge.config.databasePath);
  try {
    // As `bridge config set` run with an old key would store it.
    createLocationRegistry(db, createSealer(randomBytes(32))).setConfig("loc-2", { smsApiKey: "old-key-api-key-123456" }, Date.now());
    const wrong = "tokens.sms_api_key of loc-2: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with";
    expect(checkSealed(db, createSealer(Buffer.from(KEY, "hex")))).toEqual([wrong]);
    // A key that opens none of them is still refused as a whole.
    expect(() => checkSealed(db, createSealer(randomBytes(32)))).toThrow("BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");

    const status = await bridge.admin("/api/admin/status");
    expect(status.status).toBe(200);
    const view = (await status.json()) as { needs_attention: { location_id: string; reason: string }[] };
    expect(view.needs_attention).toEqual([{ location_id: "loc-2", reason: expect.stringContaining(`${wrong}: its messages wait; store it again`) }]);
    const listed = (await (await bridge.admin("/api/admin/locations")).json()) as { locations: { location_id: string; sms_api_key: string }[] };
    expect(listed.locations.map((l) => [l.location_id, l.sms_api_key])).toEqual([["loc-1", ""], ["loc-2", "(cannot be opened)"]]);
  } finally {
    db.close();
  }
});

test("token refresh --all: a location whose token the key does not open fails alone, named; the others are refreshed", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  await bridge.install("loc-2");
  const alien = createSealer(randomBytes(32)).seal("rt-old", { table: "tokens", column: "refresh_token", row: "loc-1" });
  bridge.core.db.prepare("UPDATE tokens SET refresh_token = ? WHERE location_id = 'loc-1'").run(alien);

  const out: string[] = [];
  const err: string[] = [];
  const code = await run(["token", "refresh", "--all", "--force", "--json"], { out: (s) => out.push(s), err: (s) => err.push(s), env: bridge.env });
  expect(code).toBe(1);
  expect(err.join("")).toContain("1 refresh(es) failed");
  const { results } = JSON.parse(out.join("")) as { results: { location_id: string; status: string; error?: string }[] };
  expect(results).toEqual([
    expect.objectContaining({ location_id: "loc-1", status: "failed", error: "tokens.refresh_token of loc-1: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with" }),
    expect.objectContaining({ location_id: "loc-2", status: "refreshed" }),
  ]);
});

test.each(["short", "zz".repeat(32), randomBytes(31).toString("base64")])("key %j is refused at start", (key) => {
  expect(() => loadConfig({ BRIDGE_ENCRYPTION_KEY: key }, "store")).toThrow(/BRIDGE_ENCRYPTION_KEY: must be 32 bytes/);
});

test("values written before the key was set stay readable, and are sealed on their next write", async () => {
  const bridge = await start(); // no key yet: stored plain
  await bridge.install("loc-1");
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "plain-api-key-123456" }, Date.now());
  const plain = (await bridge.core.tokens.get("loc-1"))!;
  const onDisk = () => onDiskOf(bridge, "loc-1");
  expect(onDisk()).toEqual({ access_token: plain.accessToken, refresh_token: plain.refreshToken, sms_api_key: "plain-api-key-123456" });

  const db = openDb(bridge.config.databasePath);
  try {
    const sealed = createLocationRegistry(db, createSealer(Buffer.from(KEY, "hex"))); // the key is set now
    expect(sealed.get("loc-1")).toMatchObject({ accessToken: plain.accessToken, smsApiKey: "plain-api-key-123456" });
    sealed.updateTokens("loc-1", "at-new", "rt-new", Date.now() + 86_400_000, Date.now());
    sealed.setConfig("loc-1", { smsApiKey: "plain-api-key-123456" }, Date.now());
  } finally {
    db.close();
  }
  for (const value of Object.values(onDisk())) expect(value).toMatch(/^enc:v2:/);
  expect(JSON.stringify(onDisk())).not.toMatch(/at-new|rt-new|plain-api-key/);
});

test("a server started without the key answers 503, and holds the job, when a CLI command sealed a secret meanwhile", async () => {
  const bridge = await start(); // serve runs without BRIDGE_ENCRYPTION_KEY
  await bridge.install("loc-1");
  const db = openDb(bridge.config.databasePath); // as `bridge config set` with the key would
  try {
    createLocationRegistry(db, createSealer(Buffer.from(KEY, "hex"))).setConfig("loc-1", { smsApiKey: "sealed-api-key-123456" }, Date.now());
  } finally {
    db.close();
  }

  for (const path of ["/api/admin/locations", "/api/admin/locations/loc-1/config"]) {
    const res = await bridge.admin(path);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY" });
  }
  expect((await bridge.webhook(outbound("e-sealed"))).status).toBe(200);
  await waitFor(() => bridge.logs.some((line) => line.includes("job for message e-sealed failed: the database holds encrypted secrets")));
  expect(bridge.gateway.sent()).toEqual([]);
  expect((await bridge.core.jobs.get("e-sealed"))?.state).toBe("queued");
});

test("a status report that meets such a secret is tried again, not given up, and goes out once it can be read", async () => {
  const bridge = await start(); // serve runs without BRIDGE_ENCRYPTION_KEY
  await bridge.install("loc-1");
  const withStore = (sealer: ReturnType<typeof createSealer>, apiKey: string) => {
    const db = openDb(bridge.config.databasePath);
    try {
      createLocationRegistry(db, sealer).setConfig("loc-1", { smsApiKey: apiKey }, Date.now());
    } finally {
      db.close();
    }
  };
  let reports = 0;
  bridge.crm.on("PUT /conversations/messages/:messageId/status", () => {
    if (reports++ > 0) return Response.json({ success: true });
    withStore(createSealer(Buffer.from(KEY, "hex")), "sealed-api-key-123456"); // a CLI command, with the key
    return Response.json({ message: "too early" }, { status: 403 });
  });

  expect((await bridge.webhook(outbound("e-report"))).status).toBe(200);
  await waitFor(() => bridge.logs.some((line) => line.includes("message e-report: status report failed (the database holds encrypted secrets")));
  expect((await bridge.core.jobs.get("e-report"))?.state).toBe("reporting");

  withStore(createSealer(undefined), "plain-api-key-123456"); // readable again (as after a restart with the key)
  await waitFor(async () => (await bridge.core.jobs.get("e-report"))?.state === "done");
  expect(reports).toBe(2);
  expect(bridge.gateway.sent()).toHaveLength(1);
});

test("a refresh token's ciphertext copied into sms_api_key is refused, never sent to the gateway as an API key", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  const { refreshToken } = (await bridge.core.tokens.get("loc-1"))!;
  sql(bridge, "UPDATE tokens SET sms_api_key = refresh_token WHERE location_id = 'loc-1'");

  expect((await bridge.webhook(outbound("e-swapped"))).status).toBe(200);
  const misplaced = "tokens.sms_api_key of loc-1: the stored value was sealed for another row or column, or altered, so it is not used";
  await waitFor(() => bridge.logs.some((line) => line.includes(`job for message e-swapped failed: ${misplaced}`)));
  expect(bridge.gateway.sent()).toEqual([]);
  expect((await bridge.core.jobs.get("e-swapped"))?.state).toBe("queued"); // it waits for an operator, nothing is lost
  // The operator's view says why it waits, once however often it is tried again.
  await waitFor(() => bridge.logs.filter((line) => line.includes("job for message e-swapped failed")).length >= 2);
  const shown = (await (await bridge.admin("/api/admin/messages/e-swapped")).json()) as { status: string; timeline: { event: string }[] };
  expect(shown.status).toBe("queued");
  expect(shown.timeline.filter((t) => t.event === "error")).toEqual([expect.objectContaining({ detail: `${misplaced}; store it again` })]);
  // The listing goes on, this key shown as not opened rather than as no key at all.
  const res = await bridge.admin("/api/admin/locations");
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ locations: [expect.objectContaining({ location_id: "loc-1", sms_api_key: "(cannot be opened)" })] });

  // Setting the key again mends it; the waiting message goes out with that key.
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "mended-api-key-123456" }, Date.now());
  await waitFor(async () => (await bridge.core.jobs.get("e-swapped"))?.state === "done", 10_000);
  expect(bridge.gateway.sent().map((s) => s.apiKey)).toEqual(["mended-api-key-123456"]);
  expect(bridge.logs.join("")).not.toContain(refreshToken);
});

test("a ciphertext copied into another row or another column fails to open; the key still passes the start check", async () => {
  const bridge = await start({ env: { BRIDGE_ENCRYPTION_KEY: KEY } });
  await bridge.install("loc-1");
  await bridge.install("loc-2");
  sql(bridge, "UPDATE tokens SET refresh_token = (SELECT refresh_token FROM tokens WHERE location_id = 'loc-1') WHERE location_id = 'loc-2'");
  sql(bridge, "UPDATE tokens SET access_token = refresh_token WHERE location_id = 'loc-1'");

  for (const [id, column] of [["loc-2", "refresh_token"], ["loc-1", "access_token"]]) {
    await expect(bridge.core.tokens.get(id!)).rejects.toThrow(`tokens.${column} of ${id}: the stored value was sealed for another row or column, or altered`);
  }
  const db = openDb(bridge.config.databasePath);
  try {
    // Whichever row the check meets first: one bad row must not stop every location, or the CLI that mends it.
    expect(() => checkSealed(db, createSealer(Buffer.from(KEY, "hex")))).not.toThrow();
    expect(() => checkSealed(db, createSealer(randomBytes(32)))).toThrow("is not the key");
  } finally {
    db.close();
  }
});

test("enc:v1 values (sealed before values were bound) still open, and the first process with the key seals them as v2", async () => {
  const bridge = await start(); // the values are written plain, then sealed as an earlier bridge did
  for (const id of ["loc-1", "loc-2"]) await bridge.install(id);
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "old-api-key-123456" }, Date.now());
  const before = await bridge.core.tokens.list();
  const key = Buffer.from(KEY, "hex");
  const toV1 = (id: string) => {
    const plain = before.find((record) => record.locationId === id)!;
    const v1 = (value: string) => (value ? `'${sealV1(value, key)}'` : "''");
    const values = `access_token = ${v1(plain.accessToken)}, refresh_token = ${v1(plain.refreshToken)}, sms_api_key = ${v1(plain.smsApiKey)}`;
    sql(bridge, `UPDATE tokens SET ${values} WHERE location_id = '${id}'`);
  };
  toV1("loc-1");
  toV1("loc-2");
  expect(Object.values(onDiskOf(bridge, "loc-1"))).toEqual(Array(3).fill(expect.stringMatching(/^enc:v1:/)));
  const keyed = createSealer(key);
  const db = openDb(bridge.config.databasePath);
  try {
    expect(createLocationRegistry(db, keyed).list()).toEqual(before); // v1 still opens

    // Any command with the key: here `bridge locations list`.
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t), env: { BRIDGE_ENCRYPTION_KEY: KEY } };
    expect(await run(["--db", bridge.config.databasePath, "locations", "list", "--json"], io)).toBe(0);
    expect(out.join("")).toContain('"sms_api_key": "old-api-key-..."');
    for (const id of ["loc-1", "loc-2"]) {
      for (const value of Object.values(onDiskOf(bridge, id))) expect(value).toMatch(/^(enc:v2:|$)/);
    }
    expect(createLocationRegistry(db, keyed).list()).toEqual(before);

    // And `serve` (createCore), which says so in its log.
    toV1("loc-2");
    const logs: string[] = [];
    const config = loadConfig({ ...bridge.env, BRIDGE_ENCRYPTION_KEY: KEY }, "serve");
    createCore(config, db, createLogger("info", captureStream(logs)));
    expect(logs.join("")).toContain("secrets of 1 location(s) sealed again, now bound to their row and column");
    expect(Object.values(onDiskOf(bridge, "loc-2"))).toEqual([expect.stringMatching(/^enc:v2:/), expect.stringMatching(/^enc:v2:/), ""]);
    expect(createLocationRegistry(db, keyed).list()).toEqual(before);
  } finally {
    db.close();
  }
});

function onDiskOf(b: Bridge, locationId: string): Record<string, string> {
  const raw = new Database(b.config.databasePath, { readonly: true });
  try {
    return raw.prepare("SELECT access_token, refresh_token, sms_api_key FROM tokens WHERE location_id = ?").get(locationId) as Record<string, string>;
  } finally {
    raw.close();
  }
}

/** Changes the database behind bridge's back, as someone with write access to the file could. */
function sql(b: Bridge, statement: string): void {
  const raw = new Database(b.config.databasePath);
  try {
    expect(raw.prepare(statement).run().changes).toBe(1);
  } finally {
    raw.close();
  }
}
