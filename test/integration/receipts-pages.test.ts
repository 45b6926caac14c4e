import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/**
 * Cast's log read whatever page size it serves, and whatever its clock says
 * (docs/architecture.md, "Receipts"): a page shorter than the limit asked does not end
 * the log; only an empty page, or the oldest waiting send, does.
 */
const start = bridgePerTest();
const SENDS = 30;

/** The carrier's receipts come 3 s after each send: every send waits at once, most of them past the newest page. */
async function sendAll(bridge: Bridge): Promise<void> {
  bridge.gateway.receipts((_, since) => (since < 3000 ? { status: "sent" } : { status: "delivered", dlr_status: "DELIVRD" }));
  for (let i = 0; i < SENDS; i++) expect((await bridge.webhook(outbound(`m-${i}`))).status).toBe(200);
  await waitFor(() => bridge.crm.statusReports().length === SENDS, 15_000);
  expect(bridge.crm.statusReports().every((r) => r.body.status === "delivered")).toBe(true);
}

test("Cast serving 10-entry log pages: 30 waiting sends matched from the log, no status call; the page size logged once", async () => {
  const bridge = await start({ tuning: { receiptBookMs: 200 } }, "loc-1");
  bridge.gateway.capLogPages(10);

  await sendAll(bridge);

  expect(bridge.gateway.statusCalls()).toEqual([]);
  expect(bridge.gateway.logCalls().map((r) => r.query.get("offset"))).toEqual(expect.arrayContaining(["10", "20"]));
  const told = bridge.logs.filter((l) => l.includes("receipts: Cast serves its log 10 entries a page (500 asked)"));
  expect(told).toHaveLength(1);
});

test("Cast's clock 80 s behind ours, its log in pages: receipts still matched from the log, no status call", async () => {
  const bridge = await start({ tuning: { receiptBookMs: 200 } }, "loc-1");
  bridge.gateway.capLogPages(10);
  bridge.gateway.clockOffset(-80_000);

  await sendAll(bridge);

  expect(bridge.gateway.statusCalls()).toEqual([]);
  // Cast writes whole seconds, and the send takes its time: 80 s and a little more.
  expect(bridge.logs.join("")).toMatch(/receipts: Cast's log dates our sends 8[01] s before we sent them; reads allow for it/);
});
