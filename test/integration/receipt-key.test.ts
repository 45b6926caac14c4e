import { randomBytes } from "node:crypto";
import { expect, test } from "vitest";
import { keyTag } from "../../src/core/key-tag.ts";
import { KEY_GONE } from "../../src/core/delivery/receipts.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/**
 * Cast tells of a message only to the API key that sent it (docs/services/cast-api.md: logs and status
 * are per account): a receipt awaited while the location's key changes is still asked
 * with the key the message went with.
 */

const startWith = bridgePerTest();
const OLD = "their-own-key-0123";

/** m-1 is sent with OLD and waits for its receipt, which the carrier has not given yet. */
async function sentWithOldKey(bridge: Bridge): Promise<{ receiptIn: () => void }> {
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: OLD }, Date.now());
  let receiptIn = false;
  bridge.gateway.receipts(() => (receiptIn ? { status: "undelivered", dlr_status: "REJECTD" } : { status: "sent" }));
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "reporting" && bridge.gateway.logCalls().length >= 1);
  return { receiptIn: () => (receiptIn = true) };
}

function storedKey(bridge: Bridge, apiKey: string): string | undefined {
  const row = bridge.core.db.prepare<[string], { api_key: string }>("SELECT api_key FROM gateway_keys WHERE key_tag = ?").get(keyTag(apiKey));
  return row?.api_key;
}

test.each([
  { change: "replaced", smsApiKey: "their-new-key-4567" },
  { change: "cleared (the shared key sends now)", smsApiKey: "" },
])("the location's key is $change while a receipt is awaited: the carrier's REJECTD is still read and reported", async ({ smsApiKey }) => {
  const bridge = await startWith({}, "loc-1");
  const { receiptIn } = await sentWithOldKey(bridge);

  await bridge.core.tokens.setConfig("loc-1", { smsApiKey }, Date.now());
  const readsBefore = bridge.gateway.logCalls().length;
  receiptIn();
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);

  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ outcome: "failed", receipt: "REJECTD" });
  expect(bridge.crm.statusReports().map((r) => r.body)).toEqual([{ status: "failed", error: expect.objectContaining({ code: "REJECTD" }) }]);
  // Asked with the key it was sent with, not the one configured now.
  const after = [...bridge.gateway.logCalls().slice(readsBefore), ...bridge.gateway.statusCalls()];
  expect(after.map((r) => r.headers["x-api-key"])).toContain(OLD);
  expect(after.map((r) => r.headers["x-api-key"]).filter((key) => key !== OLD)).toEqual([]);
});

test("the key a receipt waits on is kept sealed, and forgotten once no message waits with it", async () => {
  const bridge = await startWith({ env: { BRIDGE_ENCRYPTION_KEY: randomBytes(32).toString("hex") } }, "loc-1");
  const { receiptIn } = await sentWithOldKey(bridge);

  const sealed = storedKey(bridge, OLD) ?? "";
  expect(sealed).toMatch(/^enc:v2:/);
  expect(sealed).not.toContain(OLD);
  // A message still waits with it: kept.
  await bridge.core.gatewayKeys.forgetUnused();
  expect(await bridge.core.gatewayKeys.sentWith(keyTag(OLD))).toBe(OLD);

  receiptIn();
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  // The worker's prune (at its start, then hourly) forgets it.
  await bridge.worker.stop(1000);
  await bridge.worker.start();
  await waitFor(() => storedKey(bridge, OLD) === "");
  expect(await bridge.core.gatewayKeys.sentWith(keyTag(OLD))).toBeUndefined();
});

test("a message whose key is neither configured nor kept is not reported before DLR_WAIT; its timeline says why", async () => {
  const bridge = await startWith({ env: { DLR_WAIT: "2s" } }, "loc-1");
  await sentWithOldKey(bridge);
  const deadline = (await bridge.core.jobs.get("m-1"))?.receiptDeadline ?? 0;

  // As for a message an older bridge sent, which kept no key.
  bridge.core.db.prepare("UPDATE gateway_keys SET api_key = ''").run();
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "their-new-key-4567" }, Date.now());
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);

  const { receipt_at } = bridge.core.db.prepare<[string], { receipt_at: number }>("SELECT receipt_at FROM jobs WHERE message_id = ?").get("m-1") ?? { receipt_at: 0 };
  expect(deadline).toBeGreaterThan(0);
  expect(receipt_at).toBeGreaterThanOrEqual(deadline);
  expect(await bridge.core.jobs.get("m-1")).toMatchObject({ receipt: "none" });
  const shown = (await (await bridge.admin("/api/admin/messages/m-1")).json()) as { timeline: { event: string; detail: string }[] };
  expect(shown.timeline).toContainEqual(expect.objectContaining({ event: "error", detail: KEY_GONE }));
});
