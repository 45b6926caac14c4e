import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

/**
 * Every message that ends failed, whatever the reason, leaves a warn line naming the
 * message, its location and the reason (docs/operations.md, "Finding a message"): the operator's log says
 * what HighLevel was told.
 */

const start = bridgePerTest();

interface Case {
  name: string;
  options?: BridgeOptions;
  /** Seeded before the webhook; default loc-1. */
  locations?: string[];
  setup?: (b: Bridge) => unknown;
  fields?: Record<string, unknown>;
  says: string;
}

const refused = (status: number, error: string) => () => jsonResponse({ success: false, error }, status);

const cases: Case[] = [
  { name: "no token for the location", locations: [], says: "no token for location: loc-1" },
  { name: "an uninstalled location", setup: (b) => b.core.tokens.markUninstalled("loc-1", Date.now()), says: "location loc-1 has uninstalled the app" },
  { name: "not a PH mobile number", fields: { phone: "+12025550123" }, says: "not a Philippine mobile number: +120***0123" },
  { name: "a text over Cast's limit", fields: { message: "x".repeat(10_001) }, says: "the message is 10001 characters" },
  { name: "too many parts", options: { env: { SMS_MAX_PARTS: "1" } }, fields: { message: "x".repeat(200) }, says: "2 parts; at most 1 allowed" },
  {
    name: "a pending location without a key of its own",
    locations: [],
    setup: (b) => b.core.tokens.save({ locationId: "loc-1", companyId: "other", accessToken: "a", refreshToken: "r", expiresAt: Date.now() + 3_600_000 }, Date.now(), false),
    says: "location loc-1 is not approved to use the shared gateway key",
  },
  { name: "no API key anywhere", options: { env: { SMS_API_KEY: "" } }, says: "no SMS gateway API key" },
  { name: "Cast refused the message (400)", setup: (b) => b.gateway.on(SEND, refused(400, "invalid sender")), says: "gateway rejected the message (400): invalid sender" },
  {
    name: "a key held past SMS_HOLD_MAX (402)",
    options: { env: { SMS_HOLD_MAX: "1s" }, tuning: { holdProbeMs: 60_000 } },
    setup: (b) => b.gateway.on(SEND, refused(402, "Insufficient credits")),
    says: "the SMS gateway refused this location's API key for longer than SMS_HOLD_MAX",
  },
  {
    name: "no clear answer until SMS_HOLD_MAX (500s)",
    options: { env: { SMS_HOLD_MAX: "1s" }, tuning: { sendBackoffMs: 100 } },
    setup: (b) => b.gateway.on(SEND, refused(500, "boom")),
    says: "gateway answered 500: boom; delivery unknown; gave up after",
  },
  { name: "the carrier refused it (REJECTD)", setup: (b) => b.gateway.receipts(() => ({ status: "undelivered", dlr_status: "REJECTD" })), says: "the carrier rejected the message (REJECTD)" },
];

test.each(cases)("$name: a warn line names the message, its location and the reason", async ({ options, locations, setup, fields, says }) => {
  const bridge = await start(options, ...(locations ?? ["loc-1"]));
  await setup?.(bridge);
  expect((await bridge.webhook(outbound("m-1", fields))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.outcome === "failed" && (await bridge.core.jobs.get("m-1"))?.receiptDeadline === null, 10_000);

  const warn = bridge.logs.find((line) => /\[warn\] message m-1 of location loc-1 (not sent|failed): /.test(line));
  expect(warn, bridge.logs.join("")).toContain(says);
});

sqliteOnly("recovery at start of the one server on the file (recoverAtStart, src/core/run.ts)")("a send a crash caught without an idempotency key: its warn line names it", async () => {
  const bridge = await start({ worker: false }, "loc-1");
  expect((await bridge.webhook(outbound("m-1"))).status).toBe(200);
  const job = (await bridge.core.jobs.get("m-1"))!;
  expect(await bridge.core.jobs.claimForSending(job.id, Date.now())).toBe(true); // as an older bridge left it: no key

  await bridge.worker.start();

  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 5000);
  expect(bridge.logs.join("")).toContain("[warn] message m-1 of location loc-1 failed: delivery unknown after restart");
});
