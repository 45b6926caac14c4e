import { keyKind } from "../phone-key.ts";
import type { GatewayDriver, Gateways } from "./gateway.ts";

/**
 * The gateway drivers by kind, and one SmsGateway over them: a key that names a
 * registered kind (`android:<device>`, phone-key.ts) is that driver's; any other key is a
 * gateway account's API key, the driver's of `accounts` (Cast's). Each call goes to the
 * driver that owns its key; what differs between drivers is read from `driverOf(key)`.
 */
export function createGatewayRegistry(accounts: GatewayDriver, named: GatewayDriver[]): Gateways {
  const drivers = new Map<string, GatewayDriver>([[accounts.kind, accounts]]);
  for (const driver of named) {
    if (drivers.has(driver.kind)) throw new Error(`two gateway drivers of kind ${driver.kind}`);
    drivers.set(driver.kind, driver);
  }
  const byKey = new Map(named.map((driver) => [driver.kind, driver]));
  const driverOf = (key: string): GatewayDriver => {
    const kind = keyKind(key)?.kind;
    return (kind !== undefined && byKey.get(kind)) || accounts;
  };
  return {
    drivers,
    driverOf,
    // The account driver's limit (Cast's 10,000 characters) is checked before a message's
    // key is chosen; SMS_MAX_PARTS keeps every message far shorter.
    maxMessageLength: accounts.maxMessageLength,
    send: (req) => driverOf(req.apiKey).send(req),
    status: (key, id) => driverOf(key).status(key, id),
    logs: (key, page) => driverOf(key).logs(key, page),
    balance: (key) => driverOf(key).balance(key),
    senderIds: (key) => driverOf(key).senderIds(key),
  };
}

/** Each driver's idempotency window, by its kind: crash recovery resends each gateway's sends within its own (delivery/recovery.ts). */
export function resendWindows(gateways: Pick<Gateways, "drivers">): Record<string, number> {
  return Object.fromEntries([...gateways.drivers].map(([kind, driver]) => [kind, driver.idempotencyWindowMs]));
}
