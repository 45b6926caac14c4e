import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { PhoneSettings } from "../../src/db/phones.ts";
import { createAndroidDriver } from "../../src/core/clients/android-driver.ts";
import { createCastClient } from "../../src/core/clients/cast.ts";
import type { GatewayDriver, SendRequest } from "../../src/core/clients/gateway.ts";
import { phoneKey } from "../../src/core/phone-key.ts";
import { GatewayError } from "../../src/errors.ts";
import { BALANCE, castError, SEND, startFakeGateway } from "../helpers/fake-gateway.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, startFakePhone } from "../helpers/fake-phone.ts";
import { closedPort } from "../helpers/http.ts";

// One suite of cases, run against every gateway driver with its fake (docs/architecture.md,
// "Adding a gateway"). A new driver adds its entry to DRIVERS; every case then holds it.

/** A driver under test, against its fake. */
interface Rig {
  driver: GatewayDriver;
  /** The key its sends go with. */
  key: string;
  /** The credential behind the key, which the message log must never name. */
  secret: string;
  /** How many messages the gateway has taken (sent or holds to send). */
  taken(): number;
  /** The carrier delivers the message. */
  deliver(messageId: string): void;
  /** The next send is refused as it is (a bad request about this message). */
  refuseNextSend(): void;
  /** The credentials are refused from now on. */
  refuseCredentials(): void;
  /** The same driver, pointed at an address where nothing listens. */
  unreachable(): Promise<GatewayDriver>;
  close(): Promise<void>;
}

interface DriverEntry {
  kind: string;
  start(): Promise<Rig>;
}

const CAST_KEY = "cast-live-key-0123456789";

const DRIVERS: DriverEntry[] = [
  {
    kind: "cast",
    async start() {
      const fake = await startFakeGateway();
      const driver = (apiUrl: string) => createCastClient({ apiUrl, timeoutMs: 2000, retries: 0 });
      return {
        driver: driver(fake.url),
        key: CAST_KEY,
        secret: CAST_KEY,
        taken: () => fake.sent().length,
        // The fake's carrier delivers every message at once.
        deliver: () => undefined,
        refuseNextSend: () =>
          fake.on(SEND, () => {
            fake.on(SEND, fake.accept);
            return castError(400, "INVALID_PHONE", "invalid phone number");
          }),
        refuseCredentials: () => {
          const refused = () => castError(401, "INVALID_API_KEY", "invalid API key");
          fake.checkKey(refused);
          fake.on(BALANCE, refused);
        },
        unreachable: async () => driver(`http://127.0.0.1:${await closedPort()}`),
        close: () => fake.close(),
      };
    },
  },
  {
    kind: "android",
    async start() {
      const phone = await startFakePhone();
      // The location's settings as the store gives them: read at every call.
      let settings: PhoneSettings = { locationId: "loc-1", gateway: "android", url: phone.url, user: PHONE_USER, password: PHONE_PASSWORD, deviceId: DEVICE, signingKey: "" };
      const driver = (at: () => PhoneSettings) =>
        createAndroidDriver({ phones: { byDevice: async () => [at()] }, sendDeadlineMs: 600_000, dlrWaitMs: 1_800_000, messagesPerMinute: 20, messagesPerHour: 100, timeoutMs: 2000 });
      return {
        driver: driver(() => settings),
        key: phoneKey(DEVICE),
        secret: PHONE_PASSWORD,
        taken: () => phone.messages.size,
        deliver: (id) => phone.advance(id, "Delivered"),
        refuseNextSend: () => phone.answerNextSend(400),
        refuseCredentials: () => (settings = { ...settings, password: "wrong-password" }),
        unreachable: async () => {
          const away = { ...settings, url: `http://127.0.0.1:${await closedPort()}` };
          return driver(() => away);
        },
        close: () => phone.close(),
      };
    },
  },
];

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  const error: unknown = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

describe.each(DRIVERS)("the $kind driver", (entry) => {
  let rig: Rig;
  let serial = 0;
  beforeAll(async () => (rig = await entry.start()));
  afterAll(() => rig.close());
  const request = (idempotencyKey = `job-${++serial}-${entry.kind}`): SendRequest => ({
    apiKey: rig.key,
    to: "09171234567",
    message: "hello",
    senderId: "",
    idempotencyKey,
  });

  test("is registered under its kind", () => {
    expect(rig.driver.kind).toBe(entry.kind);
  });

  test("send: the gateway takes the message once and answers its id and parts", async () => {
    const before = rig.taken();
    const sent = await rig.driver.send(request());
    expect(sent.messageId).not.toBe("");
    expect(sent.parts).toBe(1);
    expect(sent.replayed).toBeUndefined();
    expect(rig.taken()).toBe(before + 1);
  });

  test("a repeated send under one idempotency key sends once, within the idempotency window it declares", async () => {
    expect(rig.driver.idempotencyWindowMs).toBeGreaterThan(0);
    const before = rig.taken();
    const first = await rig.driver.send(request("job-repeated"));
    const again = await rig.driver.send(request("job-repeated"));
    expect(again).toMatchObject({ messageId: first.messageId, replayed: true });
    expect(rig.taken()).toBe(before + 1);
  });

  test("status: a delivered message reads delivered, DELIVRD; a message it has no record of is not_found", async () => {
    const sent = await rig.driver.send(request());
    rig.deliver(sent.messageId);
    expect(await rig.driver.status(rig.key, sent.messageId)).toMatchObject({ status: "delivered", dlrStatus: "DELIVRD" });
    expect((await failure(rig.driver.status(rig.key, "no-such-message"))).failure).toBe("not_found");
  });

  test("receipts: a driver that reads them from a log lists its sends there; one whose receipts are pushed has no log", async () => {
    const sent = await rig.driver.send(request());
    const logs = rig.driver.logs(rig.key, { limit: 500, offset: 0 });
    if (rig.driver.receipts.source === "log") {
      expect((await logs).statuses.has(sent.messageId)).toBe(true);
    } else {
      expect((await failure(logs)).failure).toBe("unknown");
    }
  });

  test("balance and sender IDs, as its account says it keeps them", async () => {
    const { credits, senderIds } = rig.driver.account;
    const balance = await rig.driver.balance(rig.key);
    if (credits) expect(balance).toBeGreaterThan(0);
    else expect(balance).toBe(0);
    const listed = await rig.driver.senderIds(rig.key);
    if (senderIds) expect(listed.length).toBeGreaterThan(0);
    else expect(listed).toEqual([]);
  });

  test("the message log's name of its gateway names no secret", () => {
    expect(rig.driver.gatewayOf(rig.key)).not.toContain(rig.secret);
  });

  test("a request refused as it is: rejected", async () => {
    rig.refuseNextSend();
    expect((await failure(rig.driver.send(request()))).failure).toBe("rejected");
  });

  test("nothing listening: unreachable", async () => {
    const away = await rig.unreachable();
    expect((await failure(away.send(request()))).failure).toBe("unreachable");
  });

  // Last: the credentials stay refused.
  test("refused credentials: key_refused, on a send and on balance, the call a held key is probed with", async () => {
    rig.refuseCredentials();
    expect((await failure(rig.driver.send(request()))).failure).toBe("key_refused");
    expect((await failure(rig.driver.balance(rig.key))).failure).toBe("key_refused");
  });
});
