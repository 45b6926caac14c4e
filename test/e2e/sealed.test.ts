import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { createSealer } from "../../src/db/sealer.ts";
import { createLocationRegistry } from "../../src/db/tokens.ts";
import { e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

let e2e: E2E;
let server: Serve | undefined;
const KEY = randomBytes(32);
const OLD = randomBytes(32);

beforeAll(async () => {
  e2e = await e2eSetup("sealed", { BRIDGE_ENCRYPTION_KEY: KEY.toString("hex") });
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

async function stop(): Promise<void> {
  server!.child.kill("SIGTERM");
  expect(await exited(server!.child)).toBe(0);
  server = undefined;
}

const WRONG = "tokens.sms_api_key of loc-1: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with";

test("one location's API key sealed with another key: serve starts and names it, the others send, its messages wait; rekey mends the file", async () => {
  const { env, dir, crm, gateway } = e2e;
  server = await startServe(env, dir);
  for (const id of ["loc-1", "loc-2"]) {
    crm.grantLocation(`code-${id}`, id);
    expect((await fetch(`${server.url}/oauth-callback?code=code-${id}`)).status).toBe(200);
  }
  await stop();
  // As `bridge config set loc-1 --sms-api-key -` run with an old BRIDGE_ENCRYPTION_KEY would store it.
  const db = openDb(env.DATABASE_PATH!);
  createLocationRegistry(db, createSealer(OLD)).setConfig("loc-1", { smsApiKey: "loc-1-own-key-0123456789" }, Date.now());
  db.close();

  server = await startServe(env, dir);
  expect(server.log).toContain(`${WRONG}: not used, and what needs it waits (the others work)`);
  expect((await e2e.webhook(server.url, outbound("m-loc-2", { locationId: "loc-2" }))).status).toBe(200);
  expect((await e2e.webhook(server.url, outbound("m-loc-1"))).status).toBe(200);
  await waitFor(() => crm.statusReports().some((r) => r.messageId === "m-loc-2" && r.body.status === "delivered"), 10_000);
  await waitFor(() => server!.log.includes(`job for message m-loc-1 failed: ${WRONG}`), 10_000);
  expect(gateway.sent().map((s) => s.message)).toEqual(["hello m-loc-2"]);

  const status = await runBridge(env, dir, ["status", "--json"]);
  expect(status.code).toBe(0);
  const view = JSON.parse(status.stdout) as { needs_attention: { location_id: string; reason: string }[] };
  expect(view.needs_attention).toEqual([{ location_id: "loc-1", reason: expect.stringContaining(`${WRONG}: its messages wait`) }]);
  const doctor = JSON.parse((await runBridge(env, dir, ["doctor", "--json"])).stdout) as { checks: { check: string; status: string; detail: string }[] };
  expect(doctor.checks).toContainEqual({ check: "location loc-1", status: "fail", detail: WRONG });
  expect(doctor.checks.filter((c) => c.check === "location loc-2")).toEqual([]);

  // The mend: rekey from the key that sealed it to the one serve has; the values already under that one stay.
  await stop();
  const keyFile = join(dir, "key");
  writeFileSync(keyFile, KEY.toString("hex"), { mode: 0o600 });
  const rekeyed = await runBridge({ ...env, BRIDGE_ENCRYPTION_KEY: OLD.toString("hex") }, dir, ["rekey", "--new-key-file", keyFile]);
  expect(rekeyed.stderr).toBe("");
  expect(rekeyed.code).toBe(0);
  server = await startServe(env, dir);
  expect(server.log).not.toContain("is not the key");
  await waitFor(() => crm.statusReports().some((r) => r.messageId === "m-loc-1" && r.body.status === "delivered"), 15_000);
  expect(gateway.sent().filter((s) => s.message === "hello m-loc-1").map((s) => s.apiKey)).toEqual(["loc-1-own-key-0123456789"]);
  await stop();
}, 90_000);
