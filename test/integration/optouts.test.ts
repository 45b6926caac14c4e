import { describe, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { castError, SEND, UNSUBSCRIBED } from "../helpers/fake-gateway.ts";

const startWith = bridgePerTest();
/** A bridge with "loc-1" installed, sending as sender ID BRIDGE. */
const start = (options: BridgeOptions = {}) => startWith({ ...options, env: { SMS_SENDER_ID: "BRIDGE", ...options.env } }, "loc-1");

/** Sends one webhook and waits until its job is finished; what HighLevel was told of it. */
async function deliver(b: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  expect((await b.webhook(outbound(messageId, fields))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get(messageId))?.state === "done", 10_000);
  return b.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);
}

const OPTED_OUT = { status: "failed", error: { code: "opted_out", type: "saas", message: "recipient opted out" } };

describe("the location's opt-out list", () => {
  test("a listed number gets no SMS and HighLevel is told 'recipient opted out'; taken off, it gets the next", async () => {
    const b = await start();
    await b.core.optOutList.add("loc-1", "+639171234567", "operator");

    expect(await deliver(b, "m-1")).toEqual([OPTED_OUT]);
    expect(b.gateway.calls()).toEqual([]);

    await b.core.optOutList.remove("loc-1", "+639171234567");
    expect(await deliver(b, "m-2")).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent()).toMatchObject([{ to: "09171234567", message: "hello m-2" }]);
  });

  test("any written form of the number is the same number; another location's list does not count", async () => {
    const b = await start();
    await b.seed("loc-2");
    await b.core.optOutList.add("loc-1", "0917 123 4567", "reply");

    expect(await deliver(b, "m-1", { phone: "+63 917 123 4567" })).toEqual([OPTED_OUT]);
    expect(await deliver(b, "m-2", { locationId: "loc-2" })).toEqual([{ status: "delivered" }]);
    expect(await deliver(b, "m-3", { phone: "+639181234567" })).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent().map((s) => s.message)).toEqual(["hello m-2", "hello m-3"]);
  });
});

describe("Cast's unsubscribed list", () => {
  test("a number that unsubscribed from the message's sender ID gets no SMS; from another sender ID it does", async () => {
    const b = await start();
    b.gateway.unsubscribe([
      { phone: "+639171234567", sender_id: "BRIDGE" },
      { phone: "+639181234567", sender_id: "OTHER" },
    ]);

    expect(await deliver(b, "m-1")).toEqual([OPTED_OUT]);
    expect(await deliver(b, "m-2", { phone: "+639181234567" })).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent().map((s) => s.to)).toEqual(["09181234567"]);
    // Kept a while: one read served both sends.
    expect(b.gateway.unsubscribedCalls()).toHaveLength(1);
    // Read, not copied: the location's own list stays empty.
    expect(await b.core.optOuts.list("loc-1")).toEqual([]);
  });

  test("without a sender ID (Cast's default one), a number that unsubscribed from any of the account's counts", async () => {
    const b = await start({ env: { SMS_SENDER_ID: "" } });
    b.gateway.unsubscribe([{ phone: "+639171234567", sender_id: "SOMESENDER" }]);
    expect(await deliver(b, "m-1")).toEqual([OPTED_OUT]);
    expect(b.gateway.calls()).toEqual([]);
  });

  test("a list that cannot be read stops no send, and is logged once", async () => {
    const b = await start();
    b.gateway.on(UNSUBSCRIBED, () => castError(500, "INTERNAL_ERROR", "internal error"));

    expect(await deliver(b, "m-1")).toEqual([{ status: "delivered" }]);
    expect(await deliver(b, "m-2")).toEqual([{ status: "delivered" }]);
    const warned = b.logs.filter((line) => /unsubscribed list .* could not be read/.test(line) && /warn/i.test(line));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/answered 500/);
  });
});

test("two servers on one database: a key's unsubscribed list is read by one of them, and every server's sends check its copy", async () => {
  // Each server calls Cast from its own address (CAST_LOCAL_ADDRESS): the fake tells who read.
  const first = await start({ balances: false, sync: false, beatMs: 50, env: { CAST_LOCAL_ADDRESS: "127.0.0.2" } });
  first.gateway.unsubscribe([{ phone: "+639171234567", sender_id: "BRIDGE" }]);
  expect(await deliver(first, "m-1")).toEqual([OPTED_OUT]);
  expect(first.gateway.unsubscribedCalls().map((r) => r.remoteAddress)).toEqual(["127.0.0.2"]);

  const shared = { DATABASE_PATH: first.config.databasePath, SMS_API_URL: first.gateway.url, CRM_API_URL: first.crm.url, SMS_SENDER_ID: "BRIDGE" };
  const second = await startWith({ balances: false, sync: false, beatMs: 50, env: { ...shared, CAST_LOCAL_ADDRESS: "127.0.0.3" } });
  // Which server claims a job is a race: pairs of messages (one to the listed number) until the second has sent.
  const sentBy = () => new Set(first.gateway.received(SEND).map((r) => r.remoteAddress));
  // Both report to the first's HighLevel: what it was told of each.
  const told = (id: string) => first.crm.statusReports().filter((r) => r.messageId === id).map((r) => r.body);
  for (let n = 2; n < 40 && !sentBy().has("127.0.0.3"); n += 2) {
    expect((await second.webhook(outbound(`m-${n}`))).status).toBe(200);
    expect((await second.webhook(outbound(`m-${n + 1}`, { phone: "+639181234567" }))).status).toBe(200);
    await waitFor(() => told(`m-${n}`).length > 0 && told(`m-${n + 1}`).length > 0, 10_000);
    // Two bridges on one SQLite file may both report a job (no claim names its server there): each tells the same.
    for (const body of told(`m-${n}`)) expect(body).toEqual(OPTED_OUT);
    for (const body of told(`m-${n + 1}`)) expect(body).toEqual({ status: "delivered" });
  }
  expect(sentBy()).toContain("127.0.0.3");
  // One read served both servers: the second checked the first's stored copy.
  expect(first.gateway.unsubscribedCalls().map((r) => r.remoteAddress)).toEqual(["127.0.0.2"]);
  expect(first.gateway.sent().map((s) => s.to)).not.toContain("09171234567");
});

describe("the admin API: /api/admin/locations/{id}/optouts", () => {
  const path = "/api/admin/locations/loc-1/optouts";
  const body = (phone: unknown) => JSON.stringify({ phone });

  test("an operator adds a number: its next message is not sent; removed, the one after is", async () => {
    const b = await start();
    const added = await b.admin(path, { method: "POST", body: body("09171234567") });
    expect(added.status).toBe(200);
    expect(await added.json()).toEqual({ location_id: "loc-1", phone: "0917***4567", added: true });
    const again = await b.admin(path, { method: "POST", body: body("+639171234567") });
    expect(await again.json()).toEqual({ location_id: "loc-1", phone: "0917***4567", added: false });

    const listed = await b.admin(path);
    expect(await listed.json()).toEqual({
      location_id: "loc-1",
      opt_outs: [{ phone: "0917***4567", by: "operator", opted_out_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) }],
    });
    expect(await deliver(b, "m-1")).toEqual([OPTED_OUT]);
    expect(b.gateway.calls()).toEqual([]);

    const removed = await b.admin(path, { method: "DELETE", body: body("+63 917 123 4567") });
    expect(await removed.json()).toEqual({ location_id: "loc-1", phone: "0917***4567", removed: true });
    expect(await (await b.admin(path)).json()).toEqual({ location_id: "loc-1", opt_outs: [] });
    expect(await deliver(b, "m-2")).toEqual([{ status: "delivered" }]);
    expect(b.gateway.sent().map((s) => s.message)).toEqual(["hello m-2"]);
  });

  test.each([
    { name: "not a PH mobile", at: path, init: { method: "POST", body: body("+14155550100") }, status: 400, error: "not a Philippine mobile number: +141***0100" },
    { name: "text around the number", at: path, init: { method: "DELETE", body: body("+639171234567 x") }, status: 400, error: "not a Philippine mobile number: +639***67 x" },
    { name: "no phone", at: path, init: { method: "POST", body: "{}" }, status: 400, error: "phone must be a string: a Philippine mobile number" },
    { name: "a body that is no object", at: path, init: { method: "POST", body: "[]" }, status: 400, error: expect.stringMatching(/must be a JSON object/) },
    { name: "not JSON", at: path, init: { method: "POST", body: "phone=1" }, status: 400, error: "request body is not valid JSON" },
    { name: "an unknown location", at: "/api/admin/locations/loc-9/optouts", init: {}, status: 404, error: "location not found: loc-9" },
    { name: "a malformed location id", at: "/api/admin/locations/loc%2E%2E%2Fx/optouts", init: {}, status: 400, error: expect.stringMatching(/^invalid location id/) },
  ])("$name: $status", async ({ at, init, status, error }) => {
    const b = await start();
    const res = await b.admin(at, init);
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ error });
    expect(await b.core.optOuts.list("loc-1")).toEqual([]);
  });

  test("without the admin key: 401, nothing listed", async () => {
    const b = await start();
    const res = await b.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: body("09171234567") });
    expect(res.status).toBe(401);
    expect(await b.core.optOuts.list("loc-1")).toEqual([]);
  });
});
