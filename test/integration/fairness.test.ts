import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { TEST_STORE } from "../helpers/test-store.ts";

/** Cast's limits and fair turns between locations (docs/architecture.md, "Pacing and fair turns"), through real HTTP. */

const startWith = bridgePerTest();

/** A bridge with locations "loc-a" and "loc-b", and a gateway that takes `latencyMs` to answer a send. */
async function start(messagesPerSecond: number, latencyMs: number) {
  const bridge = await startWith({ env: { CAST_MESSAGES_PER_SECOND: String(messagesPerSecond) } }, "loc-a", "loc-b");
  const gateway = bridge.gateway;
  gateway.on(SEND, async () => {
    await sleep(latencyMs);
    return gateway.accept();
  });
  return bridge;
}

/** Posts the webhooks in flights of 25, so that a slow machine has queued them all long before they are sent. */
async function post(bridge: Bridge, ids: string[], locationId: string) {
  for (let i = 0; i < ids.length; i += 25) {
    const flight = ids.slice(i, i + 25).map((id) => bridge.webhook(outbound(id, { locationId, message: id })));
    for (const res of await Promise.all(flight)) expect(res.status).toBe(200);
  }
}

/**
 * The campaign's sends already under way when the other message came: on SQLite its reads
 * answer at once; on PostgreSQL a send's reads, shared token and claim are some ten round
 * trips, 100-300 ms on a loaded machine, so at 20 a second up to a second's worth is
 * under way. Without turns it waited for the whole backlog.
 */
const UNDER_WAY = TEST_STORE === "postgres" ? 20 : 3;

test("a bulk campaign of one location does not hold up another's message on the same key", async () => {
  const bridge = await start(20, 50);
  await post(bridge, Array.from({ length: 150 }, (_, i) => `a-${i}`), "loc-a");
  await waitFor(() => bridge.gateway.sent().length >= 30, 10_000); // the campaign is well under way

  const sentWhenAcknowledged = bridge.gateway.sent().length;
  await post(bridge, ["b-1"], "loc-b");
  await waitFor(() => bridge.gateway.sent().some((s) => s.message === "b-1"), 10_000);
  const order = bridge.gateway.sent().map((s) => s.message);
  const campaignSendsBefore = order.indexOf("b-1") - sentWhenAcknowledged;

  // At most the sends already under way and the next turn; before, it waited for the whole backlog.
  expect(campaignSendsBefore).toBeLessThanOrEqual(UNDER_WAY);
  expect(order.filter((m) => m.startsWith("a-")).length).toBeLessThan(150);
});

test("sends keep to CAST_MESSAGES_PER_SECOND per key: a gateway enforcing it answers no 429", async () => {
  const bridge = await start(20, 20);
  // The fake allows what Cast allows, with two messages to spare for the jitter of loopback timing.
  const limit = bridge.gateway.limit(20, 22);
  await post(bridge, Array.from({ length: 80 }, (_, i) => `m-${i}`), "loc-a");
  await waitFor(() => bridge.crm.statusReports().length >= 80, 20_000);

  expect(limit.rateLimited).toBe(0);
  expect(bridge.gateway.sent()).toHaveLength(80);
  expect(bridge.crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
});

test("messages waiting for the key's budget hold no worker: status reports and other keys go on", async () => {
  const bridge = await start(1, 0);
  await bridge.core.tokens.setConfig("loc-b", { smsApiKey: "loc-b-own-key-0123" }, Date.now());
  // 40 messages at 1 a second on the global key: far more than the worker's 16 slots.
  await post(bridge, Array.from({ length: 40 }, (_, i) => `slow-${i}`), "loc-a");
  await post(bridge, ["b-own-key"], "loc-b");

  await waitFor(() => bridge.crm.statusReports().some((r) => r.messageId === "b-own-key"), 5_000);
  expect(bridge.gateway.sent().filter((s) => s.message.startsWith("slow-")).length).toBeLessThan(10);
});

test("four keys together keep to CAST_REQUESTS_PER_SECOND: a gateway enforcing it per address answers no 429", async () => {
  const bridge = await startWith({ env: { CAST_MESSAGES_PER_SECOND: "20", CAST_REQUESTS_PER_SECOND: "30" } });
  // Cast's 30 a second, burst 50, for all calls from this address, with two to spare for loopback jitter.
  const limit = bridge.gateway.limitRequests(30, 52);
  const locations = ["loc-1", "loc-2", "loc-3", "loc-4"];
  for (const [i, location] of locations.entries()) {
    await bridge.seed(location);
    await bridge.core.tokens.setConfig(location, { smsApiKey: `key-of-${location}-0123` }, Date.now());
    await post(bridge, Array.from({ length: 40 }, (_, n) => `${i}-${n}`), location);
  }
  await waitFor(() => bridge.crm.statusReports().length >= 160, 30_000);

  expect(limit.rateLimited).toBe(0);
  expect(new Set(bridge.gateway.sent().map((s) => s.apiKey)).size).toBe(4);
  expect(bridge.crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
});

test("status reports do not wait behind their location's backlog of sends", async () => {
  const bridge = await start(5, 0);
  await post(bridge, Array.from({ length: 60 }, (_, i) => `m-${i}`), "loc-a");
  await waitFor(() => bridge.crm.statusReports().length >= 5, 10_000);
  // Reported while most of the campaign still waits for the key's budget.
  expect(bridge.gateway.sent().length).toBeLessThan(40);
});
