import { describe, expect, test } from "vitest";
import Database from "better-sqlite3";
import { dirname, join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { run } from "../../src/cli/index.ts";
import { openDb } from "../../src/db/index.ts";
import { migrate } from "../../src/db/schema.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { checkApprovals } from "../../src/core/operator/doctor/approvals.ts";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";
import { commandEnv, sqliteOnly } from "../helpers/test-store.ts";

/** Who may use the operator's gateway key (docs/configuration.md, "Who may use your gateway key"), through real HTTP. */

async function callback(bridge: Bridge, code: string) {
  const res = await bridge.fetch(`/oauth-callback?code=${code}`);
  return { status: res.status, body: await res.text() };
}

/**
 * A database a bridge made before approvals existed (schema 1), holding one location,
 * e.g. a stranger's install, migrated to this bridge's schema. Removed with `dirname`.
 */
function upgradedFromSchema1(locationId: string, companyId: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "bridge-upgraded-")), "bridge.db");
  const old = new Database(path);
  old.exec(MIGRATIONS[0]!);
  old.pragma("user_version = 1");
  old.prepare(
    "INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES (?, ?, 'at', 'rt', ?, 1, 1)",
  ).run(locationId, companyId, Date.now() + 86_400_000);
  old.close();
  const upgrading = openDb(path, { keepOlderSchema: true });
  migrate(upgrading);
  upgrading.close();
  return path;
}

/** Tests of a SQLite file made by an old schema, upgraded: PostgreSQL's schema starts at SQLite's version 18. */
const onSqliteFile = sqliteOnly("a SQLite file of schema 1, upgraded by src/db/migrations.ts");

async function sendAndWait(bridge: Bridge, messageId: string, fields: Record<string, unknown> = {}) {
  const res = await bridge.webhook(outbound(messageId, fields));
  expect(res.status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().find((r) => r.messageId === messageId));
  return (await bridge.core.jobs.get(messageId))!;
}

describe("with ALLOWED_COMPANY_IDS set to another company", () => {
  const startWith = bridgePerTest();
  const start = () => startWith({ env: { ALLOWED_COMPANY_IDS: "operatorCo1, operatorCo2" } });

  test("an outsider's location install is refused with 403, nothing stored, logged at warn", async () => {
    const bridge = await start();
    bridge.crm.grantLocation("code-x", "loc-x");
    expect(await callback(bridge, "code-x")).toEqual({ status: 403, body: `company ${COMPANY_ID} may not install this app` });
    expect(await bridge.core.tokens.list()).toEqual([]);
    expect(bridge.logs.join("")).toContain(`[warn] install failed: company ${COMPANY_ID} may not install this app`);
  });

  test("an outsider's agency install is refused before any location token is fetched", async () => {
    const bridge = await start();
    bridge.crm.grantCompany("code-co", { installedLocations: ["a", "b"] });
    expect(await callback(bridge, "code-co")).toEqual({ status: 403, body: `company ${COMPANY_ID} may not install this app` });
    expect(bridge.crm.received("POST /oauth/locationToken")).toEqual([]);
    expect(await bridge.core.tokens.list()).toEqual([]);
  });

  test("a listed company's install is approved at once and sends with the global key", async () => {
    const bridge = await start();
    bridge.crm.grantLocation("code-ok", "loc-ok", { companyId: "operatorCo2" });
    expect((await callback(bridge, "code-ok")).status).toBe(200);
    expect(await bridge.core.tokens.get("loc-ok")).toMatchObject({ approved: true, companyId: "operatorCo2" });
    expect(await sendAndWait(bridge, "m-ok", { locationId: "loc-ok" })).toMatchObject({ outcome: "delivered" });
    expect(bridge.gateway.sent()).toMatchObject([{ apiKey: GLOBAL_SMS_KEY }]);
  });
});

describe("without ALLOWED_COMPANY_IDS: installs start pending", () => {
  const startWith = bridgePerTest();
  const start = () => startWith({ env: { ALLOWED_COMPANY_IDS: "", SMS_SENDER_ID: "OPERATOR" } });

  test("a pending location's message does not reach the gateway with the global key; approve, then it does", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: false });
    expect(bridge.logs.join("")).toContain("installed location loc-1 (company company-1); pending");

    const refused = await sendAndWait(bridge, "m-pending");
    const reason = "location loc-1 is not approved to use the shared gateway key";
    expect(refused).toMatchObject({ outcome: "failed", errorCode: "not_approved", errorMessage: reason });
    expect(bridge.gateway.sent()).toEqual([]);
    expect(bridge.crm.statusReports()).toMatchObject([{ body: { status: "failed", error: { message: reason } } }]);
    expect(bridge.logs.join("")).toContain(`[warn] message m-pending of location loc-1 not sent: ${reason}`);

    const approve = await bridge.admin("/api/admin/locations/loc-1/approve", { method: "POST" });
    expect(approve.status).toBe(200);
    expect(await approve.json()).toEqual({ location_id: "loc-1", approved: true, off_list: false });

    expect(await sendAndWait(bridge, "m-approved")).toMatchObject({ outcome: "delivered" });
    expect(bridge.gateway.sent()).toMatchObject([{ apiKey: GLOBAL_SMS_KEY, sender_id: "OPERATOR" }]);
  });

  test("a pending location with its own key sends on it, without the operator's sender ID", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "their-own-key-0123" }, Date.now());
    expect(await sendAndWait(bridge, "m-own")).toMatchObject({ outcome: "delivered" });
    const [sent] = bridge.gateway.sent();
    expect(sent?.apiKey).toBe("their-own-key-0123");
    expect(sent?.sender_id).toBeUndefined();
  });

  test("the admin list shows who is approved; approving an unknown location is a 404", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const list = (await (await bridge.admin("/api/admin/locations")).json()) as { locations: unknown[] };
    expect(list.locations).toMatchObject([{ location_id: "loc-1", approved: false, uninstalled_at: null }]);
    const res = await bridge.admin("/api/admin/locations/loc-9/approve", { method: "POST" });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "location not found: loc-9" });
  });

  test("approval needs the admin key", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const res = await bridge.fetch("/api/admin/locations/loc-1/approve", { method: "POST" });
    expect(res.status).toBe(401);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: false });
  });

  test("a reinstall keeps an approval given before", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await bridge.core.tokens.setApproved("loc-1", true, Date.now());
    await bridge.install("loc-1");
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: true });
  });
});

describe("ALLOWED_COMPANY_IDS is checked at every send, not only at install", () => {
  const startWith = bridgePerTest();
  const offList = "location loc-b belongs to company agencyB, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key";

  /** A bridge whose agencyB location was installed (and approved) while agencyB was on the list, restarted with agencyA only. */
  async function takenOffTheList(): Promise<Bridge> {
    const before = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA,agencyB", SMS_SENDER_ID: "OPERATOR" } });
    before.crm.grantLocation("code-b", "loc-b", { companyId: "agencyB" });
    expect((await callback(before, "code-b")).status).toBe(200);
    expect(await before.core.tokens.get("loc-b")).toMatchObject({ approved: true });
    await before.close();
    return startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA", SMS_SENDER_ID: "OPERATOR", DATABASE_PATH: before.config.databasePath } });
  }

  test("a location of a company taken off the list is pending at its next message: reported failed, logged, not sent", async () => {
    const bridge = await takenOffTheList();
    const refused = await sendAndWait(bridge, "m-b", { locationId: "loc-b" });
    expect(refused).toMatchObject({ outcome: "failed", errorCode: "not_approved", errorMessage: offList });
    expect(bridge.gateway.sent()).toEqual([]);
    expect(bridge.crm.statusReports()).toMatchObject([{ body: { status: "failed", error: { message: offList } } }]);
    expect(bridge.logs.join("")).toContain(`[warn] message m-b of location loc-b not sent: ${offList}`);
  });

  test("with its own key it still sends, on its key and without the operator's sender ID", async () => {
    const bridge = await takenOffTheList();
    await bridge.core.tokens.setConfig("loc-b", { smsApiKey: "agency-b-own-key-0123" }, Date.now());
    expect(await sendAndWait(bridge, "m-own", { locationId: "loc-b" })).toMatchObject({ outcome: "delivered" });
    const [sent] = bridge.gateway.sent();
    expect(sent?.apiKey).toBe("agency-b-own-key-0123");
    expect(sent?.sender_id).toBeUndefined();
  });

  test("status names it as pending; back on the list, it sends again", async () => {
    const bridge = await takenOffTheList();
    const status = (await (await bridge.admin("/api/admin/status")).json()) as { needs_attention: unknown[] };
    const reason = "pending: its company agencyB is not in ALLOWED_COMPANY_IDS, and it has no key of its own";
    expect(status.needs_attention).toEqual([{ location_id: "loc-b", reason }]);

    const again = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA,agencyB", DATABASE_PATH: bridge.config.databasePath } });
    await bridge.close();
    expect(await sendAndWait(again, "m-back", { locationId: "loc-b" })).toMatchObject({ outcome: "delivered" });
    expect(again.gateway.sent()).toMatchObject([{ apiKey: GLOBAL_SMS_KEY }]);
  });

  test("locations list and the admin API show it off the list, not plainly approved", async () => {
    const bridge = await takenOffTheList();
    const listed = (await (await bridge.admin("/api/admin/locations")).json()) as { locations: { location_id: string; approved: boolean; off_list: boolean }[] };
    expect(listed.locations.find((l) => l.location_id === "loc-b")).toMatchObject({ approved: true, off_list: true });
    const out: string[] = [];
    expect(await run(["locations", "list"], { out: (t) => out.push(t), err: (t) => out.push(t), env: commandEnv(bridge.env) })).toBe(0);
    const row = out.join("").split("\n").find((line) => line.startsWith("loc-b"));
    expect(row).toContain("off list");
  });

  onSqliteFile("a stranger's location that the schema-2 upgrade approved does not send on the operator's key", async () => {
    const path = upgradedFromSchema1("loc-s", "stranger");
    try {
      const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA", SMS_SENDER_ID: "OPERATOR", DATABASE_PATH: path } });
      expect(await bridge.core.tokens.get("loc-s")).toMatchObject({ approved: true, companyId: "stranger" });
      const refused = await sendAndWait(bridge, "m-phish", { locationId: "loc-s", message: "Your account is locked: http://phish.example" });
      const reason = "location loc-s belongs to company stranger, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key";
      expect(refused).toMatchObject({ outcome: "failed", errorCode: "not_approved", errorMessage: reason });
      expect(bridge.gateway.sent()).toEqual([]);
      await bridge.close();
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  });

  onSqliteFile("with a list, an upgrade's approval of a listed company's location still serves", async () => {
    const path = upgradedFromSchema1("loc-a", "agencyA");
    try {
      const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA", DATABASE_PATH: path } });
      expect(await sendAndWait(bridge, "m-a", { locationId: "loc-a" })).toMatchObject({ outcome: "delivered" });
      expect(bridge.gateway.sent()).toMatchObject([{ apiKey: GLOBAL_SMS_KEY }]);
      await bridge.close();
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  });
});

describe("without ALLOWED_COMPANY_IDS, an upgrade's approvals wait for the operator's confirmation", () => {
  const startWith = bridgePerTest();
  const unconfirmed = "location loc-s was approved by a database upgrade, not by the operator: it may not use the shared gateway key until confirmed with `bridge locations approve loc-s`";

  onSqliteFile("its message is reported failed with the command that confirms it, and not sent; status, list and doctor name it; approve, then it sends", async () => {
    const path = upgradedFromSchema1("loc-s", "stranger");
    try {
      const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "", SMS_SENDER_ID: "OPERATOR", DATABASE_PATH: path } });
      expect(await bridge.core.tokens.get("loc-s")).toMatchObject({ approved: true, approvedBy: "unconfirmed" });
      const refused = await sendAndWait(bridge, "m-phish", { locationId: "loc-s", message: "Your account is locked: http://phish.example" });
      expect(refused).toMatchObject({ outcome: "failed", errorCode: "not_approved", errorMessage: unconfirmed });
      expect(bridge.gateway.sent()).toEqual([]);
      expect(bridge.crm.statusReports()).toMatchObject([{ body: { status: "failed", error: { message: unconfirmed } } }]);

      const status = (await (await bridge.admin("/api/admin/status")).json()) as { needs_attention: unknown[] };
      expect(status.needs_attention).toEqual([
        {
          location_id: "loc-s",
          reason: "pending: approved by a database upgrade, not by the operator, and it has no key of its own: confirm it with `bridge locations approve loc-s`",
        },
      ]);
      const listed = (await (await bridge.admin("/api/admin/locations")).json()) as { locations: unknown[] };
      expect(listed.locations).toMatchObject([{ location_id: "loc-s", approved: true, unconfirmed: true, off_list: false }]);
      const out: string[] = [];
      const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t), env: commandEnv(bridge.env) };
      expect(await run(["locations", "list"], io)).toBe(0);
      expect(out.join("").split("\n").find((line) => line.startsWith("loc-s"))).toContain("unconfirmed");
      expect(await checkApprovals(bridge.core.tokens, [])).toEqual([
        {
          check: "approvals",
          status: "warn",
          detail:
            "1 location(s) approved by a database upgrade, not by the operator: loc-s (company stranger); without ALLOWED_COMPANY_IDS they may not use " +
            "SMS_API_KEY or SMS_SENDER_ID until confirmed (their messages are reported failed): confirm the ones you know with " +
            "`bridge locations approve loc-s`, `bridge locations unapprove` the others",
        },
      ]);

      expect(await run(["locations", "approve", "loc-s"], io)).toBe(0);
      expect(await checkApprovals(bridge.core.tokens, [])).toEqual([]);
      expect(await sendAndWait(bridge, "m-confirmed", { locationId: "loc-s" })).toMatchObject({ outcome: "delivered" });
      expect(bridge.gateway.sent()).toMatchObject([{ apiKey: GLOBAL_SMS_KEY, sender_id: "OPERATOR" }]);
      await bridge.close();
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  });

  test("approvals given since (an operator's, a listed company's install) are not unconfirmed", async () => {
    const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "" } }, "loc-1");
    await bridge.install("loc-2");
    await bridge.core.tokens.setApproved("loc-2", true, Date.now());
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: true, approvedBy: "allowlist" });
    expect(await bridge.core.tokens.get("loc-2")).toMatchObject({ approved: true, approvedBy: "operator" });
    expect(await sendAndWait(bridge, "m-1", { locationId: "loc-1" })).toMatchObject({ outcome: "delivered" });
    expect(await sendAndWait(bridge, "m-2", { locationId: "loc-2" })).toMatchObject({ outcome: "delivered" });
  });
});

describe("unapprove", () => {
  const startWith = bridgePerTest();

  test("POST …/unapprove makes a location pending again: its next message is not sent on the global key", async () => {
    const bridge = await startWith({}, "loc-1");
    expect(await sendAndWait(bridge, "m-before")).toMatchObject({ outcome: "delivered" });

    const res = await bridge.admin("/api/admin/locations/loc-1/unapprove", { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ location_id: "loc-1", approved: false, off_list: false });
    const after = await sendAndWait(bridge, "m-after");
    expect(after).toMatchObject({ outcome: "failed", errorCode: "not_approved", errorMessage: "location loc-1 is not approved to use the shared gateway key" });
    expect(bridge.gateway.sent()).toHaveLength(1);
  });

  test("unapprove needs the admin key; an unknown location is a 404", async () => {
    const bridge = await startWith({}, "loc-1");
    expect((await bridge.fetch("/api/admin/locations/loc-1/unapprove", { method: "POST" })).status).toBe(401);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: true });
    const res = await bridge.admin("/api/admin/locations/loc-9/unapprove", { method: "POST" });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "location not found: loc-9" });
  });

  test("bridge locations unapprove, then approve, on the same store", async () => {
    const bridge = await startWith({}, "loc-1", "loc-2");
    const io = (out: string[]) => ({ out: (t: string) => out.push(t), err: (t: string) => out.push(t), env: commandEnv(bridge.env) });
    const out: string[] = [];
    expect(await run(["locations", "unapprove", "loc-1", "loc-2"], io(out))).toBe(0);
    expect(out.join("")).toContain("unapproved loc-1: pending");
    expect(await bridge.core.tokens.get("loc-2")).toMatchObject({ approved: false });
    const json: string[] = [];
    expect(await run(["locations", "approve", "loc-2", "--json"], io(json))).toBe(0);
    expect(JSON.parse(json.join(""))).toEqual({ locations: [{ location_id: "loc-2", approved: true, off_list: false }] });
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: false });
    expect(await bridge.core.tokens.get("loc-2")).toMatchObject({ approved: true });
  });

  test("bridge locations approve of a company not in ALLOWED_COMPANY_IDS says it stays pending", async () => {
    const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA" } }, "loc-1");
    await bridge.core.tokens.setApproved("loc-1", false, Date.now());
    const out: string[] = [];
    expect(await run(["locations", "approve", "loc-1"], { out: (t) => out.push(t), err: (t) => out.push(t), env: commandEnv(bridge.env) })).toBe(0);
    expect(out.join("")).toBe(
      "approved loc-1: but it stays pending: it belongs to company company-1, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key\n",
    );
  });

  test("approving a location of a company not in ALLOWED_COMPANY_IDS answers off_list, in the admin API and --json", async () => {
    const bridge = await startWith({ env: { ALLOWED_COMPANY_IDS: "agencyA" } }, "loc-1", "loc-2");
    const res = await bridge.admin("/api/admin/locations/loc-1/approve", { method: "POST" });
    expect(await res.json()).toEqual({ location_id: "loc-1", approved: true, off_list: true });
    const out: string[] = [];
    expect(await run(["locations", "approve", "loc-2", "--json"], { out: (t) => out.push(t), err: (t) => out.push(t), env: commandEnv(bridge.env) })).toBe(0);
    expect(JSON.parse(out.join(""))).toEqual({ locations: [{ location_id: "loc-2", approved: true, off_list: true }] });
  });

  test("an operator's unapprove outlasts a listed agency's reinstall and the sync reconnecting the location; approve lifts it", async () => {
    const bridge = await startWith({});
    bridge.crm.installed.ids = ["loc-1"];
    bridge.crm.grantCompany("code-co");
    expect((await callback(bridge, "code-co")).status).toBe(200);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: true, approvedBy: "allowlist" });

    expect((await bridge.admin("/api/admin/locations/loc-1/unapprove", { method: "POST" })).status).toBe(200);
    await bridge.core.tokens.markUninstalled("loc-1", Date.now());
    expect((await bridge.core.installs.sync())[0]?.added).toEqual(["loc-1"]);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: false, approvedBy: "withdrawn", uninstalledAt: 0 });

    bridge.crm.grantCompany("code-co-2");
    expect((await callback(bridge, "code-co-2")).status).toBe(200);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: false });
    const refused = await sendAndWait(bridge, "m-withdrawn", { locationId: "loc-1" });
    expect(refused).toMatchObject({ outcome: "failed", errorCode: "not_approved" });
    expect(bridge.gateway.sent()).toEqual([]);

    expect((await bridge.admin("/api/admin/locations/loc-1/approve", { method: "POST" })).status).toBe(200);
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ approved: true, approvedBy: "operator" });
  });

  test("unapproved after an attempt with no clear answer (502: the SMS may have left): failed, delivery unknown, not sent again", async () => {
    const bridge = await startWith({ tuning: { sendBackoffMs: 100 } }, "loc-1");
    let calls = 0;
    bridge.gateway.on(SEND, async () => {
      calls += 1;
      await bridge.core.tokens.setApproved("loc-1", false, Date.now());
      return jsonResponse({ success: false, error: "Bad Gateway" }, 502);
    });

    const job = await sendAndWait(bridge, "m-unclear");

    expect(calls).toBe(1);
    expect(job).toMatchObject({
      outcome: "failed",
      errorCode: "delivery_unknown",
      errorMessage:
        "location loc-1 is not approved to use the shared gateway key, after an attempt that got no clear answer; delivery unknown",
    });
    expect(bridge.crm.statusReports()).toMatchObject([{ body: { status: "failed", error: { code: "delivery_unknown" } } }]);
  });
});

describe("ids", () => {
  const start = bridgePerTest();

  test.each([
    { field: "locationId", value: "loc-1\r\n2026-11-21T00:00:00.000Z [error] forged" },
    { field: "messageId", value: ".." },
    { field: "messageId", value: "a/../../status" },
    { field: "contactId", value: "c 1" },
    { field: "locationId", value: "x".repeat(65) },
  ])("a webhook whose $field is $value is refused with 400, nothing stored", async ({ field, value }) => {
    const bridge = await start({ worker: false });
    const res = await bridge.webhook(outbound("m-1", { [field]: value }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain(field);
    expect(await bridge.core.jobs.counts()).toEqual({});
    expect(bridge.logs.join("")).not.toContain("forged");
  });
});

onSqliteFile("the migrations approve the locations that exist when approvals ship, as unconfirmed, and remember their messages", () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-migrate-"));
  try {
    const path = join(dir, "bridge.db");
    const old = new Database(path);
    old.exec(MIGRATIONS[0]!);
    old.pragma("user_version = 1");
    old.prepare("INSERT INTO tokens (location_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ('loc-old', 'at', 'rt', 1, 1, 1)").run();
    old.prepare("INSERT INTO jobs (message_id, location_id, payload, next_attempt_at, created_at, updated_at) VALUES ('m-old', 'loc-old', '{}', 1, 1, 1)").run();
    old.close();

    const db = openDb(path, { keepOlderSchema: true });
    try {
      migrate(db);
      expect(createLocationRegistry(db).get("loc-old")).toMatchObject({ approved: true, approvedBy: "unconfirmed", uninstalledAt: 0 });
      expect(db.prepare("SELECT message_id FROM seen_messages").pluck().all()).toEqual(["m-old"]);
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
