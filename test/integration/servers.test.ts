import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { createLogger } from "../../src/core/log.ts";
import { createRescuer } from "../../src/core/operator/rescue.ts";
import { createPresence } from "../../src/core/servers.ts";
import { openDb } from "../../src/db/index.ts";
import { openStore } from "../../src/store/open.ts";
import { GLOBAL_SMS_KEY, bridgePerTest, waitFor } from "../helpers/bridge.ts";
import { BALANCE } from "../helpers/fake-gateway.ts";
import { keyTag } from "../../src/core/key-tag.ts";
import { keyLease } from "../../src/core/delivery/key-owners.ts";
import { captureStream } from "../helpers/stream.ts";

// Several servers on one database: two bridges on one SQLite file stand for them here.

const start = bridgePerTest();
const quiet = { balances: false, sync: false } as const;

test("a server starting beside a live one leaves its key holds and outages alone", async () => {
  const first = await start(quiet);
  await first.core.gatewayKeys.held("tag-1", "ab…", { since: 1, status: 401, reason: "refused" });
  await first.core.outageRecords.save({ remote: "cast", since: 1, kind: "timeout", reason: "slow", failedCalls: 3, lastFailedAt: 2 });
  const second = await start({ ...quiet, env: { DATABASE_PATH: first.config.databasePath } });
  expect((await second.core.gatewayKeys.list()).find((k) => k.keyTag === "tag-1")?.heldSince).toBe(1);
  expect(await second.core.outageRecords.list()).toHaveLength(1);
  const ids = (await second.core.servers.list()).map((s) => s.id);
  expect(ids.sort()).toEqual([first.presence.id, second.presence.id].sort());
});

test("a server starting alone clears the holds and outages a stopped server left", async () => {
  const first = await start(quiet);
  await first.core.gatewayKeys.held("tag-1", "ab…", { since: 1, status: 401, reason: "refused" });
  await first.core.outageRecords.save({ remote: "cast", since: 1, kind: "timeout", reason: "slow", failedCalls: 3, lastFailedAt: 2 });
  await first.close();
  const second = await start({ ...quiet, env: { DATABASE_PATH: first.config.databasePath } });
  expect((await second.core.gatewayKeys.list()).find((k) => k.keyTag === "tag-1")).toMatchObject({ heldSince: null });
  expect(await second.core.outageRecords.list()).toEqual([]);
  expect((await second.core.servers.list()).map((s) => s.id)).toEqual([second.presence.id]);
});

test("one of two servers leads the periodic work, and the other takes the lead when it stops", async () => {
  const first = await start({ ...quiet, beatMs: 50 });
  const second = await start({ ...quiet, beatMs: 50, env: { DATABASE_PATH: first.config.databasePath } });
  await new Promise((resolve) => setTimeout(resolve, 150));
  expect(first.presence.leads()).toBe(true);
  expect(second.presence.leads()).toBe(false);
  expect((await second.core.leases.list()).map((l) => [l.name, l.holder])).toEqual([["leader", first.presence.id]]);
  await first.close();
  await waitFor(() => second.presence.leads(), 2000);
  expect((await second.core.leases.list())[0]).toMatchObject({ holder: second.presence.id, epoch: 2 });
});

test("the leader hands the servers whose heartbeat is stale to the rescue, and forgets them by default", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-rescue-"));
  const db = openDb(join(dir, "bridge.db"));
  const logs: string[] = [];
  try {
    const store = openStore({ encryptionKey: undefined }, db);
    await store.servers.beat("dead-1", "host-a");
    await new Promise((resolve) => setTimeout(resolve, 300));
    await store.servers.beat("live-1", "host-b");
    let leads = false;
    const rescued: string[][] = [];
    const rescuer = createRescuer({ servers: store.servers, log: createLogger("info", captureStream(logs)), leads: () => leads, everyMs: 10, staleMs: 250, rescue: async (ids) => void rescued.push(ids) });
    rescuer.start();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(rescued).toEqual([]); // not the leader: nothing rescued
    leads = true;
    await waitFor(() => rescued.length > 0, 1000);
    await rescuer.stop();
    expect(rescued[0]).toEqual(["dead-1"]);
    const forgetting = createRescuer({ servers: store.servers, log: createLogger("info", captureStream(logs)), leads: () => true, everyMs: 10, staleMs: 250 });
    forgetting.start();
    await waitFor(async () => (await store.servers.list()).every((s) => s.id !== "dead-1"), 1000);
    await forgetting.stop();
    expect(logs.join("\n")).toMatch(/server dead-1 sent no heartbeat .* presumed dead/);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a heartbeat the database refuses is logged, not thrown; the lead is lost once its lease lapses, and new sends stop", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-beat-"));
  const db = openDb(join(dir, "bridge.db"));
  const logs: string[] = [];
  try {
    const store = openStore({ encryptionKey: undefined }, db);
    const presence = createPresence({ servers: store.servers, leases: store.leases, log: createLogger("info", captureStream(logs)), beatMs: 20, leaderTtlMs: 150, claimsMs: 200 });
    await presence.start();
    expect(presence.leads()).toBe(true);
    expect(presence.claims()).toBe(true);
    db.close(); // every write and read from now on throws
    await waitFor(() => logs.some((line) => line.includes("cannot record this server's heartbeat")), 1000);
    await waitFor(() => !presence.leads(), 1000);
    // Past half the time after which the leader would presume it dead, it starts no send it could be rescued from.
    await waitFor(() => !presence.claims(), 1000);
    await waitFor(() => logs.some((line) => line.includes("none stored for over 0.2 s: this server starts no new sends until one is")), 1000);
    await presence.stop();
    expect(logs.join("\n")).toMatch(/cannot renew the leader's lease: .*\n[\s\S]*cannot record this server's stop/);
  } finally {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a key's balance is read by the server that owns the key, not by every server", async () => {
  const first = await start(quiet);
  const second = await start({ ...quiet, env: { DATABASE_PATH: first.config.databasePath, SMS_API_URL: first.gateway.url } });
  expect(await first.core.delivery.owners.owns(keyTag(GLOBAL_SMS_KEY))).toBe(true);
  await second.core.operator.balances.refresh([GLOBAL_SMS_KEY], true);
  expect(first.gateway.received(BALANCE)).toEqual([]);
  expect((await second.core.leases.list()).find((l) => l.name === keyLease(keyTag(GLOBAL_SMS_KEY)))?.holder).toBe(first.presence.id);
  await first.core.operator.balances.refresh([GLOBAL_SMS_KEY], true);
  expect(first.gateway.received(BALANCE)).toHaveLength(1);
  // The owner stops: its leases go with it, and the other server reads the key from then on.
  await first.close();
  expect(await second.core.delivery.owners.owns(keyTag(GLOBAL_SMS_KEY))).toBe(true);
});
