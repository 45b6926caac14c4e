import { expect, test } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/**
 * A recipient's phone is personal data: every log line, stored reason, report and
 * listing shows it masked (`0917***4567`, docs/operations.md, "Finding a message");
 * whole, it goes only to the SMS gateway.
 */

const start = bridgePerTest();

async function cli(b: Bridge, ...args: string[]) {
  const { code, stdout } = await runCli(b, ...args);
  expect(code).toBe(0);
  return stdout;
}

async function settle(b: Bridge, messageId: string, phone: string) {
  expect((await b.webhook(outbound(messageId, { phone }))).status).toBe(200);
  await waitFor(() => b.crm.statusReports().some((r) => r.messageId === messageId && r.body.status !== "pending"), 10_000);
}

/** Everything the operator and HighLevel see of a message: log, store, reports, CLI, admin API. */
async function everythingShown(b: Bridge, messageId: string): Promise<string> {
  const admin = await Promise.all([b.admin("/api/admin/messages"), b.admin(`/api/admin/messages/${messageId}`)].map(async (r) => (await r).text()));
  return [
    ...b.logs,
    JSON.stringify((await b.core.messages.get(messageId))?.errorMessage ?? null),
    JSON.stringify(b.crm.statusReports()),
    await cli(b, "messages", "list"),
    await cli(b, "messages", "list", "--json"),
    await cli(b, "messages", "show", messageId),
    await cli(b, "messages", "show", messageId, "--json"),
    ...admin,
  ].join("\n");
}

test.each([
  { name: "a number of another country", phone: "+12025550123", masked: "+120***0123", whole: "2025550123" },
  { name: "a Manila landline", phone: "+6328123456", masked: "+632***3456", whole: "28123456" },
  { name: "a long run of digits", phone: `+63${"9".repeat(297)}`, masked: "+639***9999", whole: "9".repeat(12) },
])("an invalid phone, $name: its reason shows it masked; no log line, report or listing has it whole", async ({ phone, masked, whole }) => {
  const b = await start({}, "loc-1");
  await settle(b, "m-1", phone);

  expect(await b.core.messages.get("m-1")).toMatchObject({ errorCode: "invalid_phone", errorMessage: `not a Philippine mobile number: ${masked}` });
  expect(b.crm.statusReports().at(-1)?.body.error?.message).toBe(`not a Philippine mobile number: ${masked}`);
  expect(b.logs.join("")).toContain(`[warn] message m-1 of location loc-1 not sent: not a Philippine mobile number: ${masked}`);
  expect(await everythingShown(b, "m-1")).not.toContain(whole);
});

test("a valid phone goes whole to the gateway, and nowhere else", async () => {
  const b = await start({}, "loc-1");
  await settle(b, "m-1", "+639171234567");

  expect(b.gateway.sent().map((s) => s.to)).toEqual(["09171234567"]);
  expect(await everythingShown(b, "m-1")).not.toContain("9171234567");
});
