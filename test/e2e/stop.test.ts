import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

let e2e: E2E;
let server: Serve | undefined;

beforeAll(async () => {
  e2e = await e2eSetup("stop");
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

test("SIGTERM lets in-flight sends finish, keeps the rest queued for the next start, and exits 0", async () => {
  const { crm, gateway, env, dir } = e2e;
  server = await startServe(env, dir);
  crm.grantLocation("code-stop", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-stop`)).status).toBe(200);
  // Each send takes 1.5 s, so SIGTERM finds a full set of sends in flight.
  gateway.on("POST /api/v1/sms/send", async () => {
    await sleep(1500);
    return gateway.accept();
  });
  const ids = Array.from({ length: 40 }, (_, i) => `stop-${i}`);
  for (const id of ids) expect((await e2e.webhook(server.url, outbound(id))).status).toBe(200);
  await waitFor(() => gateway.sent().length > 0);
  const inFlight = gateway.sent().length;

  const stopping = Date.now();
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  expect(Date.now() - stopping).toBeLessThan(10_000);
  // Every send that had started was finished and reported, none was cut off.
  expect(crm.statusReports().filter((r) => r.body.status === "delivered")).toHaveLength(gateway.sent().length);
  expect(gateway.sent().length).toBeGreaterThanOrEqual(inFlight);
  expect(gateway.sent().length).toBeLessThan(ids.length);

  // The rest was kept and goes out after the restart, each exactly once.
  gateway.on("POST /api/v1/sms/send", () => gateway.accept());
  server = await startServe(env, dir);
  await waitFor(() => crm.statusReports().length === ids.length, 20_000);
  const texts = gateway.sent().map((s) => s.message);
  expect(new Set(texts).size).toBe(ids.length);
  expect(crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  server = undefined;
}, 60_000);

test("SIGHUP stops gracefully as SIGTERM does: the send in flight finishes and is reported, exit 0", async () => {
  const { crm, gateway, env, dir } = e2e;
  server = await startServe(env, dir);
  crm.grantLocation("code-hup", "loc-hup");
  expect((await fetch(`${server.url}/oauth-callback?code=code-hup`)).status).toBe(200);
  const before = gateway.sent().length;
  let answering = false;
  gateway.on("POST /api/v1/sms/send", async () => {
    answering = true;
    await sleep(1000); // a send that takes a second: SIGHUP comes while it is in flight
    return gateway.accept();
  });
  expect((await e2e.webhook(server.url, outbound("hup-1", { locationId: "loc-hup" }))).status).toBe(200);
  await waitFor(() => answering);

  server.child.kill("SIGHUP");
  expect(await exited(server.child)).toBe(0);
  expect(gateway.sent()).toHaveLength(before + 1);
  expect(crm.statusReports().filter((r) => r.messageId === "hup-1").map((r) => r.body)).toEqual([{ status: "delivered" }]);
  expect(server.log).toMatch(/\[info\] SIGHUP: no longer accepting requests; finishing messages in flight \(bridge does not reload/);
  expect(server.log).toMatch(/\[info\] stopped\n$/);
  gateway.on("POST /api/v1/sms/send", () => gateway.accept());
  server = undefined;
});

test("serve keeps running when whatever reads its log goes away (`serve 2>&1 | head`)", async () => {
  server = await startServe(e2e.env, e2e.dir);
  server.child.stdout?.destroy();
  server.child.stderr?.destroy(); // the reader is gone: the next log line meets EPIPE
  for (let i = 0; i < 3; i++) {
    expect((await fetch(`${server.url}/oauth-callback?code=not-granted-${i}`)).status).toBeGreaterThanOrEqual(400); // logs a warning
  }
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect(server.child.exitCode).toBeNull();
  server.child.kill("SIGTERM");
  expect(await exited(server.child)).toBe(0);
  server = undefined;
});
