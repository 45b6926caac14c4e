import { connect, createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor } from "../helpers/bridge.ts";

/**
 * A gateway outage is ridden out (docs/architecture.md, "Retry"): bridge reaches the fake Cast through
 * a TCP relay on a fixed port that the test takes down (connections refused) and brings
 * back, as a real outage would.
 */

const OUTAGE_MS = 2 * 60_000;

const start = bridgePerTest();
let relay: Awaited<ReturnType<typeof startRelay>> | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

test("the gateway refuses connections for 2 minutes mid-drain: every message delivered exactly once, none failed", async () => {
  relay = await startRelay();
  const b = await start({ env: { CAST_MESSAGES_PER_SECOND: "20", SMS_API_URL: relay.url }, tuning: { sms: { retries: 1, retryDelayMs: 50 } } }, "loc-1");
  relay.target = Number(new URL(b.gateway.url).port);
  const ids = Array.from({ length: 200 }, (_, i) => `m-${i}`);
  for (const id of ids) expect((await b.webhook(outbound(id))).status).toBe(200);

  await waitFor(() => b.gateway.sent().length >= 50, 30_000);
  relay.down();
  await sleep(OUTAGE_MS); // the outage: for all of it, no message may be reported failed
  const sentDuringOutage = b.gateway.sent().length;
  expect(b.crm.statusReports().filter((r) => r.body.status === "failed")).toEqual([]);
  await relay.up();

  await waitFor(() => b.crm.statusReports().length >= ids.length, 150_000);
  const reports = b.crm.statusReports();
  expect(reports.filter((r) => r.body.status !== "delivered")).toEqual([]);
  expect(new Set(reports.map((r) => r.messageId)).size).toBe(ids.length);
  const texts = b.gateway.sent().map((s) => s.message);
  expect(texts).toHaveLength(ids.length); // each handled once: the rest were answered from the cache, or never arrived
  expect(new Set(texts).size).toBe(ids.length);
  expect(sentDuringOutage).toBeLessThan(ids.length);
}, 400_000);

/** A TCP relay on a port of its own to `target`; `down()` closes it (connections refused), `up()` listens again on the same port. */
async function startRelay() {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  async function up() {
    server = createServer((client) => {
      const upstream = connect(relay.target, "127.0.0.1");
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(port, "127.0.0.1", resolve));
    port = (listening.address() as { port: number }).port;
  }
  function down() {
    server?.close();
    server = undefined;
    for (const s of sockets) s.destroy();
  }
  await up();
  const relay = {
    url: `http://127.0.0.1:${port}`,
    target: 0,
    up,
    down,
    async close() {
      down();
    },
  };
  return relay;
}
