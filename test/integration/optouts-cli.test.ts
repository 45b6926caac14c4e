import { expect, test } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/** `bridge optouts list|add|remove` on a running bridge's database, run in this process. */

const start = bridgePerTest();

const cli = runCli;

async function deliver(b: Bridge, messageId: string) {
  expect((await b.webhook(outbound(messageId))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get(messageId))?.state === "done", 10_000);
  return b.crm.statusReports().filter((r) => r.messageId === messageId).map((r) => r.body);
}

test("add, list and remove a number; the running server follows at its next message", async () => {
  const b = await start({}, "loc-1");
  expect(await cli(b, "optouts", "list", "loc-1")).toEqual({ code: 0, stdout: "no opt-outs for location loc-1\n", stderr: "" });

  const added = await cli(b, "optouts", "add", "loc-1", "+63 917 123 4567");
  expect(added).toMatchObject({ code: 0, stdout: "0917***4567 added to the opt-out list of location loc-1\n" });
  expect((await cli(b, "optouts", "add", "loc-1", "09171234567")).stdout).toBe("0917***4567 was already on the opt-out list of location loc-1\n");

  const lines = (await cli(b, "optouts", "list", "loc-1")).stdout.trimEnd().split("\n");
  expect(lines.slice(0, 2)).toEqual([expect.stringMatching(/^PHONE\s+BY\s+SINCE$/), expect.stringMatching(/^0917\*\*\*4567\s+operator\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)]);
  const listed = JSON.parse((await cli(b, "optouts", "list", "loc-1", "--json")).stdout) as unknown;
  expect(listed).toEqual(await (await b.admin("/api/admin/locations/loc-1/optouts")).json());
  expect(listed).toMatchObject({ location_id: "loc-1", opt_outs: [{ phone: "0917***4567", by: "operator" }] });

  expect(await deliver(b, "m-1")).toMatchObject([{ status: "failed", error: { code: "opted_out", message: "recipient opted out" } }]);
  expect(b.gateway.calls()).toEqual([]);

  const removed = await cli(b, "optouts", "remove", "loc-1", "+639171234567", "--json");
  expect(JSON.parse(removed.stdout)).toEqual({ location_id: "loc-1", phone: "0917***4567", removed: true });
  expect((await cli(b, "optouts", "remove", "loc-1", "+639171234567")).stdout).toBe("0917***4567 was not on the opt-out list of location loc-1\n");
  expect(await deliver(b, "m-2")).toEqual([{ status: "delivered" }]);
});

test.each([
  { args: ["add", "loc-1", "+14155550100"], code: 2, says: "bridge: not a Philippine mobile number: +141***0100" },
  { args: ["remove", "loc-1", "0917"], code: 2, says: "bridge: not a Philippine mobile number: ***" },
  { args: ["add", "../x", "09171234567"], code: 2, says: 'bridge: not a location id: "../x"' },
  { args: ["list", "loc-9"], code: 1, says: "bridge: location not found: loc-9" },
  { args: ["add", "loc-9", "09171234567"], code: 1, says: "bridge: location not found: loc-9" },
])("optouts $args.0 $args.1 $args.2: exit $code", async ({ args, code, says }) => {
  const b = await start({}, "loc-1");
  const result = await cli(b, "optouts", ...args);
  expect(result.code).toBe(code);
  expect(result.stdout).toBe("");
  expect(result.stderr).toContain(says);
  expect(await b.core.optOuts.list("loc-1")).toEqual([]);
});

test("optouts list says how a number comes off the list: a DND lifted in HighLevel does not take it off", async () => {
  const b = await start({}, "loc-1");
  await cli(b, "optouts", "add", "loc-1", "09171234567");
  const listed = await cli(b, "optouts", "list", "loc-1");
  expect(listed.stdout.trimEnd().split("\n").slice(2)).toEqual([
    "",
    "A DND lifted in HighLevel does not take a number off this list; `bridge optouts remove loc-1 PHONE` does, or a reply START (or UNSTOP) from the number.",
  ]);
  expect((await cli(b, "optouts", "--help")).stdout).toContain("A DND lifted in HighLevel does not take a number off this list");
});
