import { expect, test } from "vitest";
import type { GatewayDriver } from "../../src/core/clients/gateway.ts";
import { createGatewayRegistry, resendWindows } from "../../src/core/clients/registry.ts";
import { driverKey } from "../../src/core/phone-key.ts";

/** A driver that answers every call with its kind, so a test sees which driver took it. */
function stub(kind: string, idempotencyWindowMs: number): GatewayDriver {
  const says = async () => {
    throw new Error(kind);
  };
  return {
    kind,
    maxMessageLength: kind === "cast" ? 10_000 : 1,
    budget: undefined,
    receipts: { source: "log", waitMs: undefined, unknownWithoutReceipt: false },
    idempotencyWindowMs,
    account: { credits: true, senderIds: true, unsubscribedList: true },
    gatewayOf: () => kind,
    send: says,
    status: says,
    logs: says,
    balance: async () => (kind === "cast" ? 1 : 2),
    senderIds: says,
  };
}

const cast = stub("cast", 20 * 3_600_000);
const android = stub("android", 3_600_000);
const gateways = createGatewayRegistry(cast, [android]);

test.each([
  ["a phone's key", driverKey("android", "dev-1"), "android"],
  ["an API key", "cast-live-key-0123", "cast"],
  ["an API key with a colon that names no registered kind", "sms:0123", "cast"],
  ["an API key that only starts like a kind", "androidkey", "cast"],
])("%s goes to its driver", async (_, key, kind) => {
  expect(gateways.driverOf(key).kind).toBe(kind);
  await expect(gateways.send({ apiKey: key, to: "09171234567", message: "hi", senderId: "", idempotencyKey: "k" })).rejects.toThrow(kind);
  await expect(gateways.status(key, "id")).rejects.toThrow(kind);
  expect(await gateways.balance(key)).toBe(kind === "cast" ? 1 : 2);
});

test("every driver by its kind; the account driver's text limit; two drivers of one kind are refused", () => {
  expect([...gateways.drivers.keys()]).toEqual(["cast", "android"]);
  expect(gateways.maxMessageLength).toBe(10_000);
  expect(() => createGatewayRegistry(cast, [android, stub("android", 0)])).toThrow(/two gateway drivers of kind android/);
});

test("crash recovery's windows are each driver's own, by kind", () => {
  expect(resendWindows(gateways)).toEqual({ cast: 20 * 3_600_000, android: 3_600_000 });
});
