import { describe, expect, test } from "vitest";
import { loadConfig } from "../../src/core/config.ts";
import { ConfigError } from "../../src/errors.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

// CAST_LOCAL_ADDRESS: the source address of requests to Cast (docs/operations.md), on a
// host with several. The fake Cast listens on 127.0.0.1 and records where each request
// came from; Linux answers all of 127.0.0.0/8 on the loopback, so 127.0.0.2 is a second
// address of this host.

const start = bridgePerTest();

/** Sends one message and waits until HighLevel was told how it went. */
async function deliver(b: Bridge, messageId: string): Promise<void> {
  expect((await b.webhook(outbound(messageId))).status).toBe(200);
  await waitFor(() => b.crm.statusReports().some((r) => r.messageId === messageId && r.body.status === "delivered"), 10_000);
}

const sources = (requests: { remoteAddress: string }[]) => [...new Set(requests.map((r) => r.remoteAddress))];

describe("CAST_LOCAL_ADDRESS", () => {
  test("Cast's requests come from CAST_LOCAL_ADDRESS; HighLevel's do not", async () => {
    const b = await start({ env: { CAST_LOCAL_ADDRESS: "127.0.0.2" } }, "loc-1");
    await deliver(b, "msg-local-1");
    const cast = b.gateway.requests;
    expect(cast.some((r) => r.path === "/api/v1/sms/send")).toBe(true);
    expect(sources(cast)).toEqual(["127.0.0.2"]);
    expect(sources(b.crm.requests)).toEqual(["127.0.0.1"]);
  });

  test("without CAST_LOCAL_ADDRESS Cast's requests come from the system's choice", async () => {
    const b = await start({}, "loc-1");
    await deliver(b, "msg-local-2");
    expect(sources(b.gateway.requests)).toEqual(["127.0.0.1"]);
  });

  test.each(["cast.example", "127.0.0.300", "10.0.0.0/8", "::1::2"])("CAST_LOCAL_ADDRESS=%s is refused, saying it is no address", (value) => {
    const load = () => loadConfig({ CAST_LOCAL_ADDRESS: value }, "store");
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/CAST_LOCAL_ADDRESS: .* is not an IPv4 or IPv6 address/);
  });

  test.each(["203.0.113.7", "2001:db8::7"])("CAST_LOCAL_ADDRESS=%s is taken", (value) => {
    expect(loadConfig({ CAST_LOCAL_ADDRESS: value }, "store").sms.localAddress).toBe(value);
  });
});
