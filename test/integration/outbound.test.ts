import { describe, expect, test } from "vitest";
import { GLOBAL_SMS_KEY, bridgePerTest, outbound, waitFor } from "../helpers/bridge.ts";

const start = bridgePerTest();

describe("outbound processing", () => {
  test("a signed webhook becomes one SMS in local format and a delivered status report", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const res = await bridge.webhook(outbound("m-1"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "accepted" });

    const [report] = await waitFor(() => bridge.crm.statusReports().length === 1 && bridge.crm.statusReports());
    expect(bridge.gateway.sent()).toEqual([{ apiKey: GLOBAL_SMS_KEY, to: "09171234567", message: "hello m-1" }]);
    expect(report).toMatchObject({
      messageId: "m-1",
      authorization: "Bearer at-loc-1-1",
      version: "2021-04-15",
      body: { status: "delivered" },
    });
    await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done");
  });
});
