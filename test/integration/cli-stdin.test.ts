import { beforeEach, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import type { Io } from "../../src/cli/io.ts";
import { bridgePerTest, type Bridge } from "../helpers/bridge.ts";
import { commandEnv } from "../helpers/test-store.ts";

// `bridge config set … --sms-api-key -` with the Io's standard input fed by the test;
// e2e/binary.test.ts feeds the executable's real standard input.
const start = bridgePerTest();
let bridge: Bridge;
beforeEach(async () => {
  bridge = await start();
  await bridge.install("loc-1");
});

function cli(stdin: string | undefined, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const prompts: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), env: commandEnv({ DATABASE_PATH: bridge.config.databasePath, SMS_API_URL: bridge.config.sms.apiUrl }) };
  if (stdin !== undefined) io.readLine = async (prompt) => (prompts.push(prompt), stdin);
  return run(argv, io).then((code) => ({ code, out: out.join(""), err: err.join(""), prompts }));
}

test("--sms-api-key - stores the line read from standard input, and shows it masked", async () => {
  const result = await cli("key-from-stdin-123456", "config", "set", "loc-1", "--sms-api-key", "-", "--sender-id", "BRIDGE");
  expect(result).toEqual({
    code: 0,
    out: "location_id  loc-1\nsender_id    BRIDGE\nsms_api_key  key-from-std...\nmonthly_cap  (none)\n",
    err: "",
    prompts: ["SMS API key (not shown): "],
  });
  expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ smsApiKey: "key-from-stdin-123456", senderId: "BRIDGE" });
});

test("an empty line is refused, not taken as clearing the key (that stays explicit: --sms-api-key \"\")", async () => {
  await bridge.core.tokens.setConfig("loc-1", { smsApiKey: "kept-api-key-123456" }, Date.now());
  const result = await cli("", "config", "set", "loc-1", "--sms-api-key", "-");
  expect(result.code).toBe(2);
  expect(result.err).toContain('--sms-api-key -: no key on standard input (to clear the key, use --sms-api-key "")');
  expect((await bridge.core.tokens.get("loc-1"))?.smsApiKey).toBe("kept-api-key-123456");

  expect((await cli(undefined, "config", "set", "loc-1", "--sms-api-key", "")).code).toBe(0);
  expect((await bridge.core.tokens.get("loc-1"))?.smsApiKey).toBe("");
});

test("a key read from standard input is checked like any other", async () => {
  const result = await cli("has a space", "config", "set", "loc-1", "--sms-api-key", "-");
  expect(result.code).toBe(1);
  expect(result.err).toContain("sms_api_key");
  expect(result.err).not.toContain("has a space");
});

test("with no standard input to read, - is a usage error", async () => {
  const result = await cli(undefined, "config", "set", "loc-1", "--sms-api-key", "-");
  expect(result.code).toBe(2);
  expect(result.err).toContain("--sms-api-key -: there is no standard input to read the key from");
});

test("--help recommends -", async () => {
  const result = await cli(undefined, "config", "set", "--help");
  expect(result.code).toBe(0);
  expect(result.out.replace(/\s+/g, " ")).toContain('"-" (recommended) reads it from standard input');
});
