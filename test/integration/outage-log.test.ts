import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { closedPort, jsonResponse } from "../helpers/http.ts";

// An outage of HighLevel or Cast is logged when it starts and when it ends, and not
// once per failed call in between (docs/operations.md, "Logs").

const start = bridgePerTest();

/** The log lines (debug aside) that contain `text`. */
const lines = (b: Bridge, text: string) => b.logs.filter((line) => line.includes(text) && !line.includes("[debug]"));

test("Cast answering 503: one error line when it starts, one info line with its length when it ends", async () => {
  const b = await start({ env: { DLR_WAIT: "0" }, tuning: { sendBackoffMs: 10 } }, "loc-1");
  b.gateway.on(SEND, () => jsonResponse({ success: false, error: "maintenance" }, 503));
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.gateway.calls().length >= 4);
  b.gateway.on(SEND, () => b.gateway.accept());
  await waitFor(() => b.crm.statusReports().length === 1);

  expect(lines(b, "Cast.ph unreachable")).toEqual([expect.stringMatching(/\[error\] Cast\.ph unreachable \(http\): send answered 503; sends wait until it answers\n$/)]);
  expect(lines(b, "Cast.ph reachable again")).toEqual([
    expect.stringMatching(/\[info\] Cast\.ph reachable again after \d+ s \([3-9]\d* failed calls, 1 message waited\): sends resume\n$/),
  ]);
  expect(lines(b, "message m-1")).toEqual([expect.stringContaining("[info] message m-1 of location loc-1 sent")]); // no warn line of its own
  expect(b.crm.statusReports()[0]?.body).toEqual({ status: "delivered" });
});

test("Cast refusing connections: the line names the kind and the host, once", async () => {
  const port = await closedPort();
  const b = await start({ env: { SMS_API_URL: `http://127.0.0.1:${port}` }, tuning: { sms: { retries: 1, retryDelayMs: 10 }, sendBackoffMs: 10 } }, "loc-1");
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.logs.filter((line) => line.includes("Cast.ph still unreachable")).length >= 3);

  expect(lines(b, "Cast.ph unreachable")).toEqual([
    expect.stringContaining(`[error] Cast.ph unreachable (refused): connection refused by 127.0.0.1:${port} (ECONNREFUSED); sends wait until it answers\n`),
  ]);
  expect(b.core.operator.outages.list()).toMatchObject([{ remote: "cast", kind: "refused", failedCalls: expect.any(Number) }]);
});

test("HighLevel answering 503 to status reports: one warn line, then one info line when reports go through", async () => {
  const b = await start({ env: { DLR_WAIT: "0" } }, "loc-1");
  let failing = true;
  b.crm.on("PUT /conversations/messages/:messageId/status", () =>
    failing ? jsonResponse({ message: "unavailable" }, 503) : jsonResponse({ success: true }),
  );
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.crm.statusReports().length >= 3);
  failing = false;
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done");

  expect(lines(b, "HighLevel unreachable")).toEqual([
    expect.stringMatching(/\[warn\] HighLevel unreachable \(http\): updateMessageStatus answered 503; status reports wait until it answers\n$/),
  ]);
  expect(lines(b, "HighLevel reachable again")).toEqual([
    expect.stringMatching(/\[info\] HighLevel reachable again after \d+ s \(\d+ failed calls, 1 message waited\): status reports resume\n$/),
  ]);
  expect(b.core.operator.outages.list()).toEqual([]);
});

test("HighLevel refusing connections: the warn line names the kind and the host", async () => {
  const port = await closedPort();
  const b = await start({ env: { DLR_WAIT: "0", CRM_API_URL: `http://127.0.0.1:${port}` } }, "loc-1");
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(() => b.logs.filter((line) => line.includes("message m-1: status report failed")).length >= 3);

  expect(lines(b, "HighLevel unreachable")).toEqual([
    expect.stringContaining(`[warn] HighLevel unreachable (refused): connection refused by 127.0.0.1:${port} (ECONNREFUSED); status reports wait until it answers\n`),
  ]);
  // The message's own line says why its report waits, in the same words.
  expect(b.logs.join("")).toContain(`message m-1: status report failed (connection refused by 127.0.0.1:${port} (ECONNREFUSED))`);
});
