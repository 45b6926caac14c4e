import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { BINARY, e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { waitFor } from "../helpers/bridge.ts";

let e2e: E2E;
let server: Serve | undefined;
const KEY = randomBytes(32).toString("hex");

beforeAll(async () => {
  e2e = await e2eSetup("lock", { BRIDGE_ENCRYPTION_KEY: KEY });
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

/** A second `serve`: its exit code and output, or "listening" (then it is killed) if it was not refused. */
async function secondServe(env: Record<string, string>, cwd: string) {
  const child = spawn(BINARY, ["serve"], { env: { HOST: "127.0.0.1", PORT: "0", ...env }, cwd });
  let log = "";
  child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const ended = exited(child);
  const outcome = await Promise.race([ended, waitFor(() => log.includes("listening on") && "listening", 10_000)]);
  if (outcome === "listening") {
    child.kill("SIGKILL");
    await ended;
  }
  return { outcome, log };
}

function bridge(env: Record<string, string>, ...args: string[]) {
  return runBridge(env, e2e.dir, args);
}

test("while serve runs, rekey, migrate and a second serve are refused with what to do; after kill -9 the lock is free", async () => {
  const { env, dir, crm } = e2e;
  const db = env.DATABASE_PATH!;
  server = await startServe(env, dir);
  crm.grantLocation("code-lock", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-lock`)).status).toBe(200);
  const pid = server.child.pid!;
  const held = `${db} is in use by bridge serve (pid ${pid}, since `;
  const todo = `which holds ${db}.lock: stop bridge serve first (systemctl stop bridge), then run this again`;

  const keyFile = join(dir, "new.key");
  writeFileSync(keyFile, randomBytes(32).toString("hex"), { mode: 0o600 });
  for (const args of [["rekey", "--new-key-file", keyFile], ["migrate"]]) {
    const refused = await bridge(env, ...args);
    expect(refused.code, args[0]).toBe(1);
    expect(refused.stderr).toContain(held);
    expect(refused.stderr).toContain(todo);
  }
  const second = await secondServe(env, dir);
  expect(second.outcome).toBe(1);
  expect(second.log).toContain(held);

  // The server still works with the key it has: rekey changed nothing.
  expect(await bridge(env, "locations", "list", "--json")).toMatchObject({ code: 0, stdout: expect.stringContaining("loc-1") });

  // The kernel releases the lock of a killed process: no stale lock blocks the next start.
  server.child.kill("SIGKILL");
  await exited(server.child);
  server = await startServe(env, dir);
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  server = undefined;
  const rekeyed = await bridge(env, "rekey", "--new-key-file", keyFile);
  expect(rekeyed.stderr).toBe("");
  expect(rekeyed.code).toBe(0);
}, 60_000);
