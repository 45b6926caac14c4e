import { expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor } from "../helpers/bridge.ts";
import { BALANCE, UNSUBSCRIBED } from "../helpers/fake-gateway.ts";

/** The reads of Cast no message waits on (balances, the unsubscribed list): inside Cast's limits, holding no worker. */

const start = bridgePerTest();

test("a send that waits for its key's unsubscribed list holds no worker: another key's message goes meanwhile", async () => {
  const b = await start({}, "loc-1", "loc-2");
  const otherKey = "other-gateway-key-0123456789abcdef";
  const put = await b.admin("/api/admin/locations/loc-2/config", { method: "PUT", body: JSON.stringify({ sms_api_key: otherKey }) });
  expect(put.status).toBe(200);
  // The global key's list takes a long while to read.
  let release = () => {};
  const slow = new Promise<void>((resolve) => (release = resolve));
  b.gateway.on(UNSUBSCRIBED, async (req, event) => {
    if (req.headers["x-api-key"] === GLOBAL_SMS_KEY) await slow;
    return b.gateway.own(UNSUBSCRIBED)(req, event);
  });
  try {
    // More messages than the worker runs at once (16), all on the slow list.
    for (let i = 0; i < 40; i++) expect((await b.webhook(outbound(`m-${i}`))).status).toBe(200);
    await waitFor(() => b.gateway.unsubscribedCalls().length >= 1);

    expect((await b.webhook(outbound("other", { locationId: "loc-2" }))).status).toBe(200);
    await waitFor(async () => (await b.core.jobs.get("other"))?.state === "done");
    expect(b.gateway.sent().map((s) => s.apiKey)).toEqual([otherKey]);
  } finally {
    release();
  }
  await waitFor(() => b.gateway.sent().length === 41, 20_000);
  // One read of each key's list served all its sends.
  expect(b.gateway.unsubscribedCalls().map((r) => r.headers["x-api-key"]).sort()).toEqual([GLOBAL_SMS_KEY, otherKey].sort());
});

test("the balance reads of 20 keys at once take turns in Cast's request budget: no 429", async () => {
  const b = await start({ env: { CAST_REQUESTS_PER_SECOND: "6" }, balances: false });
  const limit = b.gateway.limitRequests(6, 10);
  const keys = Array.from({ length: 20 }, (_, i) => `gateway-key-${String(i).padStart(2, "0")}-0123456789abcdef`);

  await b.core.operator.balances.refresh(keys);

  expect(b.gateway.received(BALANCE)).toHaveLength(20);
  expect(limit.rateLimited).toBe(0);
  expect((await b.core.gatewayKeys.list()).filter((k) => k.balance === 1000)).toHaveLength(20);
}, 20_000);
