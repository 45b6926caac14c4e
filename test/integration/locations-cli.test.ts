import { expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/** `bridge locations remove` on a running bridge's database, run in this process. */

const start = bridgePerTest();

async function cli(b: Bridge, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, { out: (t) => (stdout += t), err: (t) => (stderr += t), env: b.env });
  return { code, stdout, stderr };
}

test("remove without --yes: exit 2 saying what it would remove, nothing removed", async () => {
  const b = await start({}, "loc-1");
  const { code, stdout, stderr } = await cli(b, "locations", "remove", "loc-1");
  expect(code).toBe(2);
  expect(stdout).toBe("");
  expect(stderr).toContain("this would remove location loc-1: its token, sender ID, API key and approval");
  expect(stderr).toContain("--yes");
  expect(b.core.tokens.get("loc-1")).toBeDefined();
});

test("remove --yes: the record is gone (token, settings), its messages stay in the log", async () => {
  const b = await start({}, "loc-1", "loc-2");
  b.core.tokens.setConfig("loc-1", { senderId: "BRAND", smsApiKey: "own-key-0123456789" }, Date.now());
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.core.jobs.get("m-1")?.state === "done");

  const { code, stdout } = await cli(b, "locations", "remove", "loc-1", "--yes");
  expect(code).toBe(0);
  expect(stdout).toMatch(/^removed loc-1/);
  expect(b.core.tokens.get("loc-1")).toBeUndefined();
  expect(b.core.tokens.get("loc-2")).toBeDefined();
  expect(b.core.jobs.get("m-1")).toBeDefined();
});

test("remove of an unknown location: exit 1; of a malformed id: exit 2", async () => {
  const b = await start({}, "loc-1");
  expect(await cli(b, "locations", "remove", "loc-9", "--yes")).toMatchObject({ code: 1, stderr: "bridge: location not found: loc-9\n" });
  const bad = await cli(b, "locations", "remove", "loc-1\n[error] forged", "--yes");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("not a location id");
  expect(b.core.tokens.get("loc-1")).toBeDefined();
});
