import { expect, test } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { bridgePerTest, outbound, waitFor } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

/** `bridge locations list` and `remove` on a running bridge's database, run in this process. */

const start = bridgePerTest();

const cli = runCli;

sqliteOnly("sets refresh_error with core.db")("list shows each location's name when known, and whether its token works", async () => {
  const b = await start({}, "loc-ok", "loc-dead", "loc-gone");
  await b.core.tokens.setName("loc-ok", "Main Street Clinic");
  b.core.db.prepare("UPDATE tokens SET refresh_error = 'refused' WHERE location_id = 'loc-dead'").run();
  await b.core.tokens.markUninstalled("loc-gone", Date.now());

  const table = await cli(b, "locations", "list");
  expect(table.code).toBe(0);
  const lines = table.stdout.trimEnd().split("\n");
  expect(lines[0]).toMatch(/^LOCATION\s+NAME\s+COMPANY\s+.*STATUS$/);
  expect(lines.find((l) => l.startsWith("loc-ok"))).toMatch(/^loc-ok\s+Main Street Clinic\s+company-1\s.*\sok$/);
  expect(lines.find((l) => l.startsWith("loc-dead"))).toMatch(/^loc-dead\s+-\s.*\sneeds reinstall$/);
  expect(lines.find((l) => l.startsWith("loc-gone"))).toMatch(/\suninstalled$/);

  const listed = JSON.parse((await cli(b, "locations", "list", "--json")).stdout) as { locations: { location_id: string; name: string }[] };
  expect(listed.locations.map((l) => [l.location_id, l.name])).toEqual([
    ["loc-dead", ""],
    ["loc-gone", ""],
    ["loc-ok", "Main Street Clinic"],
  ]);
  const admin = (await (await b.admin("/api/admin/locations")).json()) as { locations: { name: string }[] };
  expect(admin.locations.map((l) => l.name)).toEqual(["", "", "Main Street Clinic"]);
});

test("remove without --yes: exit 2 saying what it would remove, nothing removed", async () => {
  const b = await start({}, "loc-1");
  const { code, stdout, stderr } = await cli(b, "locations", "remove", "loc-1");
  expect(code).toBe(2);
  expect(stdout).toBe("");
  expect(stderr).toContain("this would remove location loc-1: its token, sender ID, API key and approval");
  expect(stderr).toContain("--yes");
  expect(await b.core.tokens.get("loc-1")).toBeDefined();
});

test("remove --yes: the record is gone (token, settings), its messages stay in the log", async () => {
  const b = await start({}, "loc-1", "loc-2");
  await b.core.tokens.setConfig("loc-1", { senderId: "BRAND", smsApiKey: "own-key-0123456789" }, Date.now());
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done");

  const { code, stdout } = await cli(b, "locations", "remove", "loc-1", "--yes");
  expect(code).toBe(0);
  expect(stdout).toMatch(/^removed loc-1/);
  expect(await b.core.tokens.get("loc-1")).toBeUndefined();
  expect(await b.core.tokens.get("loc-2")).toBeDefined();
  expect(await b.core.jobs.get("m-1")).toBeDefined();
});

test("remove of an unknown location: exit 1; of a malformed id: exit 2", async () => {
  const b = await start({}, "loc-1");
  expect(await cli(b, "locations", "remove", "loc-9", "--yes")).toMatchObject({ code: 1, stderr: "bridge: location not found: loc-9\n" });
  const bad = await cli(b, "locations", "remove", "loc-1\n[error] forged", "--yes");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("not a location id");
  expect(await b.core.tokens.get("loc-1")).toBeDefined();
});
