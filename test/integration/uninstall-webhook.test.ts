import { describe, expect, test } from "vitest";
import { APP_ID, bridgePerTest, outbound, waitFor } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

/**
 * UNINSTALL webhooks, signed, through real HTTP: applied only once HighLevel confirms them
 * (docs/RELIABILITY.md); the unsigned one is refused with the other signature checks
 * (webhook.test.ts). INSTALL webhooks are in install-webhook.test.ts.
 */

async function expectAccepted(res: Response) {
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: "accepted" });
}

describe("UNINSTALL webhooks, with the worker running", () => {
  const start = bridgePerTest();

  test("a signed UNINSTALL HighLevel confirms marks that location uninstalled, keeps its settings, and no other", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await bridge.install("loc-2");
    await bridge.core.tokens.setConfig("loc-1", { senderId: "BRAND", smsApiKey: "own-key-0123456789" }, Date.now());
    bridge.crm.uninstall("loc-1");
    const res = await bridge.webhook({ type: "UNINSTALL", appId: APP_ID, locationId: "loc-1", companyId: "company-1" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ senderId: "BRAND", smsApiKey: "own-key-0123456789" });
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
    expect(await bridge.core.tokens.get("loc-2")).toMatchObject({ locationId: "loc-2", uninstalledAt: 0 });
  });

  test.each([
    { name: "another app's", appId: "ffffffffffffffffffffffff" },
    { name: "our client id in full, not the appId", appId: `${APP_ID}-lq8x2k` },
    { name: "no appId", appId: undefined },
    { name: "a numeric appId", appId: 42 },
  ])("a signed UNINSTALL with $name is ignored and the record stays", async ({ appId }) => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.crm.uninstall("loc-1");
    const res = await bridge.webhook({ type: "UNINSTALL", appId, locationId: "loc-1" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ignored" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ locationId: "loc-1", uninstalledAt: 0 });
    expect(bridge.logs.join("")).toMatch(/UNINSTALL of location loc-1 ignored: its appId .* is not this app's/);
  });

  test("a signed UNINSTALL with our appId in upper case marks the location", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.crm.uninstall("loc-1");
    const res = await bridge.webhook({ type: "UNINSTALL", appId: APP_ID.toUpperCase(), locationId: "loc-1" });
    expect(await res.json()).toEqual({ status: "ok" });
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  test("a captured UNINSTALL replayed after a reinstall leaves the location working", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await bridge.core.tokens.setConfig("loc-1", { senderId: "BRAND" }, Date.now());
    const captured = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    bridge.crm.uninstall("loc-1");
    expect(await (await bridge.webhook(captured)).json()).toEqual({ status: "ok" });
    await bridge.install("loc-1"); // the agency installs again
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0, senderId: "BRAND" });

    const replay = await bridge.webhook(captured);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ status: "ignored" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0, senderId: "BRAND" });
    expect(bridge.logs.join("")).toContain("UNINSTALL of location loc-1 ignored: HighLevel still accepts its token");

    await expectAccepted(await bridge.webhook(outbound("m-after-replay")));
    await waitFor(() => bridge.crm.statusReports().find((r) => r.messageId === "m-after-replay"));
    expect(await bridge.core.jobs.get("m-after-replay")).toMatchObject({ outcome: "delivered" });
    expect(bridge.gateway.sent()).toHaveLength(1);
    expect(bridge.gateway.sent()[0]).toMatchObject({ sender_id: "BRAND" });
  });

  test("a flood of replayed UNINSTALLs asks HighLevel once a minute, not once each", async () => {
    let clock = Date.now();
    const bridge = await start({ now: () => clock });
    await bridge.install("loc-1");
    const before = bridge.crm.received("POST /oauth/token").length;
    const replay = () => bridge.webhook({ type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" });
    expect(await (await replay()).json()).toEqual({ status: "ignored" });
    for (let i = 0; i < 4; i++) expect((await replay()).status).toBe(429); // not asked: sent again later
    expect(bridge.crm.received("POST /oauth/token").length - before).toBe(1);

    clock += 60_000;
    expect(await (await replay()).json()).toEqual({ status: "ignored" });
    expect(bridge.crm.received("POST /oauth/token").length - before).toBe(2);
  });

  test("a real UNINSTALL within a minute of a replayed one: 429 with Retry-After until the minute is over, then applied", async () => {
    let clock = Date.now();
    const bridge = await start({ now: () => clock });
    await bridge.install("loc-1");
    const uninstall = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    expect(await (await bridge.webhook(uninstall)).json()).toEqual({ status: "ignored" }); // the replay

    clock += 20_000;
    bridge.crm.uninstall("loc-1"); // the agency really uninstalls; HighLevel sends the event
    const real = await bridge.webhook(uninstall);
    expect(real.status).toBe(429);
    expect(real.headers.get("retry-after")).toBe("40");
    expect(await real.json()).toEqual({ error: "the uninstall cannot be confirmed yet; retry later" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0 });
    expect(bridge.logs.join("")).toContain("UNINSTALL of location loc-1 not applied yet: HighLevel accepted its token under a minute ago");

    clock += 40_000; // HighLevel sends it again
    const again = await bridge.webhook(uninstall);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ status: "ok" });
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  test("a real UNINSTALL while a refresh begun before it is running: 429 with a short Retry-After, then applied", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const before = bridge.crm.received("POST /oauth/token").length;
    const release = bridge.crm.holdRefreshes();
    const refreshing = bridge.core.installs.tokenService.refresh("loc-1", true);
    await waitFor(() => bridge.crm.received("POST /oauth/token").length === before + 1);
    bridge.crm.uninstall("loc-1"); // HighLevel accepted that refresh; then the agency uninstalls
    const uninstall = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    // Answered while that refresh is still held: joining it would wait for its answer,
    // an "installed" from before the uninstall.
    const real = await bridge.webhook(uninstall).finally(release);
    await refreshing;
    expect(real.status).toBe(429);
    expect(real.headers.get("retry-after")).toBe("5");
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0 });

    const again = await bridge.webhook(uninstall); // HighLevel sends it again
    expect(await again.json()).toEqual({ status: "ok" });
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  test("a real UNINSTALL while another process holds the refresh lease: 429, not ignored", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const held = (await bridge.core.tokens.get("loc-1"))!;
    expect(await bridge.core.tokens.tryLease("loc-1", held.serial, Date.now(), Date.now() + 60_000)).toBe(true); // the CLI's refresh
    bridge.crm.uninstall("loc-1");
    const uninstall = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    const real = await bridge.webhook(uninstall);
    expect(real.status).toBe(429);
    expect(real.headers.get("retry-after")).toBe("5");
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0 });

    await bridge.core.tokens.releaseLease("loc-1", held.serial); // that process ends
    expect(await (await bridge.webhook(uninstall)).json()).toEqual({ status: "ok" });
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  test("when HighLevel cannot confirm (its token endpoint fails): 429 with Retry-After; the retry applies it", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.crm.uninstall("loc-1");
    bridge.crm.on("POST /oauth/token", () => new Response("upstream down", { status: 503 }));
    const uninstall = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    const res = await bridge.webhook(uninstall);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await res.json()).toEqual({ error: "could not apply the uninstall; retry later" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0 });

    bridge.crm.on("POST /oauth/token", () => Response.json({ error: "invalid_grant" }, { status: 400 }));
    expect((await bridge.webhook(uninstall)).status).toBe(200);
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("when the mark cannot be stored: 429, never 500; the retry stores it", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.crm.uninstall("loc-1");
    bridge.core.db.exec("CREATE TRIGGER keep BEFORE UPDATE OF uninstalled_at ON tokens BEGIN SELECT RAISE(ABORT, 'database is locked'); END");
    const uninstall = { type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" };
    expect((await bridge.webhook(uninstall)).status).toBe(429);
    bridge.core.db.exec("DROP TRIGGER keep");
    expect((await bridge.webhook(uninstall)).status).toBe(200);
    expect((await bridge.core.tokens.get("loc-1"))!.uninstalledAt).toBeGreaterThan(0);
  });

  test("after UNINSTALL, a message for that location is reported failed and logged, not sent", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    bridge.crm.uninstall("loc-1");
    expect((await bridge.webhook({ type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" })).status).toBe(200);
    await expectAccepted(await bridge.webhook(outbound("m-after")));
    const job = await waitFor(async () => (await bridge.core.jobs.get("m-after"))?.outcome && await bridge.core.jobs.get("m-after"));
    expect(job).toMatchObject({
      outcome: "failed",
      errorCode: "uninstalled",
      errorMessage: "location loc-1 has uninstalled the app; reinstall it to send again",
    });
    expect(bridge.logs.join("")).toContain("[warn] message m-after of location loc-1 not sent: location loc-1 has uninstalled the app");
    expect(bridge.gateway.sent()).toEqual([]);
  });

  test("an agency-wide UNINSTALL (no locationId) HighLevel does not confirm is logged and changes nothing", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const res = await bridge.webhook({ type: "UNINSTALL", appId: APP_ID, companyId: "company-1" });
    expect(await res.json()).toEqual({ status: "ignored" });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ uninstalledAt: 0 });
    expect(bridge.logs.join("")).toContain("UNINSTALL of company company-1 (agency-wide) ignored: HighLevel still accepts its token");
  });
});
