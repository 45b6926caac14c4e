import { describe, expect, test } from "vitest";
import { signInPage } from "../helpers/app-api.ts";
import { SHARED_SECRET } from "../helpers/app-payload.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { runCli } from "../helpers/cli.ts";
import { CAST, SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

const CAPPED = "monthly SMS limit of 5 reached; your agency can raise it";

/** Webhooks `ids` for loc-1 all at once, each `fields` (its text, say), and waits until each is done. */
async function sendAll(bridge: Bridge, ids: string[], fields: Record<string, unknown> = {}): Promise<void> {
  const answers = await Promise.all(ids.map((id) => bridge.webhook(outbound(id, fields))));
  expect(answers.map((r) => r.status)).toEqual(ids.map(() => 200));
  await waitFor(async () => (await Promise.all(ids.map((id) => bridge.core.messages.get(id)))).every((m) => m?.state === "done"), 15_000);
}

function reports(bridge: Bridge) {
  return new Map(bridge.crm.statusReports().map((r) => [r.messageId, r.body]));
}

describe("monthly caps", () => {
  const start = bridgePerTest();

  test("a cap stops exactly at its limit under concurrent sends: nothing sent past it, the rest reported failed with the cap's reason", async () => {
    const bridge = await start({ env: { CRM_SHARED_SECRET: SHARED_SECRET } }, "loc-1");
    // A slow gateway: the sends are in flight together, none settled while the others claim.
    let inFlight = 0;
    let most = 0;
    bridge.gateway.on(SEND, async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 150));
      inFlight--;
      return bridge.gateway.accept();
    });
    expect((await runCli(bridge, "config", "set", "loc-1", "--monthly-cap", "5")).code).toBe(0);
    const ids = Array.from({ length: 12 }, (_, i) => `cap-${i}`);
    await sendAll(bridge, ids);

    expect(bridge.gateway.sent()).toHaveLength(5);
    expect(most).toBeGreaterThanOrEqual(2);
    const told = reports(bridge);
    const failed = ids.filter((id) => told.get(id)?.status === "failed");
    expect(failed).toHaveLength(7);
    for (const id of failed) {
      expect(told.get(id)).toEqual({ status: "failed", error: { code: "monthly_cap", type: "saas", message: CAPPED } });
      // Logged at warn, as every failed message is.
      expect(bridge.logs.join("")).toContain(`[warn] message ${id} of location loc-1 not sent: ${CAPPED}`);
    }
    const [row] = ((await (await bridge.admin("/api/admin/usage")).json()) as { locations: unknown[] }).locations;
    expect(row).toMatchObject({ location_id: "loc-1", messages: 12, parts: 5, delivered: 5, refused_cap: 7, failed: 0, monthly_cap: 5 });

    // The page shows the cap and that nothing is left.
    const api = await signInPage(bridge);
    expect(await (await api("/usage")).json()).toMatchObject({ parts: 5, monthly_cap: 5, left: 0, failed: 7 });
  });

  test("a message of more parts than the cap has left is refused whole; a cap raised lets the next ones go, and messages already sent are never affected", async () => {
    const bridge = await start({}, "loc-1");
    // Cast counts the parts as bridge does: two for a text of 161 GSM characters.
    let serial = 0;
    bridge.gateway.on(SEND, (req) => jsonResponse({ ...CAST.send, message_id: `cast-two-${++serial}`, parts: JSON.parse(req.body).message.length > 160 ? 2 : 1 }));
    expect((await bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify({ monthly_cap: 3 }) })).status).toBe(200);
    const long = "x".repeat(161);
    await sendAll(bridge, ["two-a"], { message: long });
    await sendAll(bridge, ["two-b"], { message: long });
    expect(bridge.gateway.sent()).toHaveLength(1);
    expect(reports(bridge).get("two-b")?.error?.message).toBe("monthly SMS limit of 3 reached; your agency can raise it");

    // Lowered below what was sent: what was sent stays delivered, and is still counted.
    await bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify({ monthly_cap: 0 }) });
    expect(await bridge.core.messages.get("two-a")).toMatchObject({ status: "delivered" });
    await bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify({ monthly_cap: null }) });
    await sendAll(bridge, ["after"]);
    expect(bridge.gateway.sent()).toHaveLength(2);
    expect(await bridge.core.usage.capOf("loc-1")).toBeUndefined();
  });

  test("an operator's retry of a capped message counts it once, as it settles again", async () => {
    const bridge = await start({}, "loc-1");
    await bridge.core.usage.setCap("loc-1", 0, Date.now());
    await sendAll(bridge, ["again"]);
    expect((await runCli(bridge, "config", "set", "loc-1", "--monthly-cap", "none")).code).toBe(0);
    expect((await bridge.admin("/api/admin/messages/again/retry", { method: "POST" })).status).toBe(200);
    await waitFor(async () => (await bridge.core.messages.get("again"))?.reportedStatus === "delivered");
    const [row] = await bridge.core.usage.list({});
    expect(row).toMatchObject({ messages: 1, delivered: 1, refused_cap: 0, parts: 1 });
  });

  test("the admin API refuses a cap that is not a whole number of parts (400), and the page may not set one", async () => {
    const bridge = await start({ worker: false, env: { CRM_SHARED_SECRET: SHARED_SECRET } }, "loc-1");
    for (const monthly_cap of [-1, 1.5, "10", 2_000_000_000]) {
      const res = await bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: JSON.stringify({ monthly_cap }) });
      expect(res.status, String(monthly_cap)).toBe(400);
    }
    const api = await signInPage(bridge);
    expect((await api("/settings", "PUT", { monthly_cap: 100 })).status).toBe(400);
    expect(await bridge.core.usage.capOf("loc-1")).toBeUndefined();
    const cli = await runCli(bridge, "config", "set", "loc-1", "--monthly-cap", "lots");
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain("--monthly-cap");
  });
});

describe("usage", () => {
  const start = bridgePerTest();

  test("usage outlives pruning: the message log's finished messages go after RETENTION_DAYS, their usage stays", async () => {
    const bridge = await start({}, "loc-1");
    await sendAll(bridge, ["kept-1", "kept-2"]);
    await sendAll(bridge, ["bad"], { phone: "12345" });
    const before = await bridge.core.usage.list({});
    expect(await bridge.core.jobs.prune(Date.now() + 1, 1000)).toBe(3);
    expect(await bridge.core.messages.get("kept-1")).toBeUndefined();
    expect(await bridge.core.usage.list({})).toEqual(before);
    expect(before).toMatchObject([{ locationId: "loc-1", gateway: "cast", messages: 3, parts: 2, delivered: 2, failed_invalid: 1 }]);
  });

  test("bridge usage --csv: one row per location and month, the documented headers; --json and the admin API give the same report", async () => {
    const bridge = await start({}, "loc-1", "loc-2");
    await bridge.core.tokens.setName("loc-1", 'Acme, "Dental"');
    await sendAll(bridge, ["a-1", "a-2"]);
    await sendAll(bridge, ["a-3"], { phone: "12345" });
    const month = bridge.core.monthOf(Date.now());
    await bridge.core.usage.setCap("loc-1", 100, Date.now());

    const csv = await runCli(bridge, "usage", "--csv");
    expect(csv.code).toBe(0);
    expect(csv.stdout.split("\r\n")).toEqual([
      "month,location_id,location_name,messages,parts,delivered,failed,failed_invalid,failed_not_sent,failed_rejected,failed_undelivered,failed_unknown,refused_opt_out,refused_cap,replies,cast_parts,android_parts,monthly_cap",
      `${month},loc-1,"Acme, ""Dental""",3,2,2,1,1,0,0,0,0,0,0,0,2,0,100`,
      "",
    ]);
    const json = JSON.parse((await runCli(bridge, "usage", "--json", "--month", month, "--location", "loc-1")).stdout);
    const api = (await (await bridge.admin(`/api/admin/usage?month=${month}&location=loc-1`)).json()) as { locations: { gateways: Record<string, unknown> }[] };
    expect(json).toEqual(api);
    expect(api.locations[0]?.gateways.cast).toMatchObject({ messages: 3, parts: 2 });
    const text = await runCli(bridge, "usage");
    expect(text.stdout).toContain(`usage in ${month}`);
    expect(text.stdout).toMatch(/loc-1 .*2 of 100/);
    expect((await runCli(bridge, "usage", "--month", "1999-01")).stdout).toBe("no usage in 1999-01\n");
  });

  test("bad input: a month not YYYY-MM or a location not an id is a usage error (2) and a 400", async () => {
    const bridge = await start({ worker: false }, "loc-1");
    for (const args of [["--month", "2026-13"], ["--month", "May"], ["--location", "a b"], ["--json", "--csv"]]) {
      expect((await runCli(bridge, "usage", ...args)).code, args.join(" ")).toBe(2);
    }
    for (const query of ["month=2026-13", "month=x", "location=a%20b"]) {
      expect((await bridge.admin(`/api/admin/usage?${query}`)).status, query).toBe(400);
    }
    expect((await bridge.fetch("/api/admin/usage")).status).toBe(401);
  });

  test("the locations at or over a share of their cap this month, for the alerts: 80 % and 100 %, a cap of 0 reached at once", async () => {
    const bridge = await start({}, "loc-1", "loc-2", "loc-3");
    const now = Date.now();
    await bridge.core.usage.setCap("loc-1", 5, now);
    await bridge.core.usage.setCap("loc-2", 50, now);
    await bridge.core.usage.setCap("loc-3", 0, now);
    await sendAll(bridge, ["s-1", "s-2", "s-3", "s-4"]);
    await sendAll(bridge, ["t-1"], { locationId: "loc-2" });
    const month = bridge.core.monthOf(now);
    expect(await bridge.core.usage.atOrOver(month, 80)).toEqual([
      { locationId: "loc-1", cap: 5, used: 4 },
      { locationId: "loc-3", cap: 0, used: 0 },
    ]);
    expect(await bridge.core.usage.atOrOver(month, 100)).toEqual([{ locationId: "loc-3", cap: 0, used: 0 }]);
  });

  test("the settings page's usage is read from the usage table: its cap and what is left, sends under way taken", async () => {
    const bridge = await start({ env: { CRM_SHARED_SECRET: SHARED_SECRET } }, "loc-1");
    await bridge.core.usage.setCap("loc-1", 10, Date.now());
    await sendAll(bridge, ["p-1"]);
    const api = await signInPage(bridge);
    expect(await (await api("/usage")).json()).toEqual({
      month: bridge.core.monthOf(Date.now()),
      messages: 1,
      parts: 1,
      delivered: 1,
      failed: 0,
      monthly_cap: 10,
      left: 9,
    });
  });
});
