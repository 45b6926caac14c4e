import fc from "fast-check";
import { afterAll, expect, test } from "vitest";
import { run } from "../../src/cli/index.ts";
import { toLocalPH } from "../../src/core/phone.ts";
import { bridgePerTest, outbound, type Bridge } from "../helpers/bridge.ts";
import { commandEnv } from "../helpers/test-store.ts";

/** Figures of the last run, printed for docs/RELIABILITY.md. */
const tried = { webhooks: 0, unsigned: 0, admin: 0, paths: 0, phones: 0, cli: 0 };
afterAll(() => {
  console.log(`hostile input tried: ${JSON.stringify(tried)}`);
});

// Closing a bridge fails the test if any request reached the error hook unhandled.
const startWith = bridgePerTest();

/** A bridge with "loc-1" installed and no worker: what the input does is all there is to see. */
async function start() {
  const bridge = await startWith({ worker: false });
  await bridge.install("loc-1");
  return bridge;
}

/** Everything observable that a rejected request must leave alone. */
async function snapshot(bridge: Bridge) {
  return JSON.stringify({ tokens: await bridge.core.tokens.list(), jobs: await bridge.core.jobs.counts() });
}

const jsonValue = fc.oneof(
  fc.json(),
  fc.record({ type: fc.constantFrom("SMS", "UNINSTALL", "INSTALL", "Email"), locationId: fc.string(), messageId: fc.string(), phone: fc.string() }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  fc.anything().map((v) => JSON.stringify(outbound("x", { attachments: v, message: v }))),
);

test("signed webhook bodies of any shape get 200 or a clear 400, never a 5xx", async () => {
  const bridge = await start();
  await fc.assert(
    fc.asyncProperty(jsonValue, async (raw) => {
      tried.webhooks++;
      const res = await bridge.webhook(undefined, { raw });
      expect([200, 400]).toContain(res.status);
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status === 400) expect(typeof body.error).toBe("string");
    }),
    { numRuns: 300 },
  );
});

test("unsigned or badly signed webhooks of any shape get 401 and change nothing", async () => {
  const bridge = await start();
  const before = await snapshot(bridge);
  await fc.assert(
    fc.asyncProperty(jsonValue, fc.option(fc.string(), { nil: undefined }), fc.constantFrom("x-ghl-signature", "x-wh-signature"), async (raw, signature, header) => {
      tried.unsigned++;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (signature !== undefined) headers[header] = signature.replace(/[^\x20-\x7e]/g, "");
      const res = await bridge.fetch("/webhooks/crm", { method: "POST", headers, body: raw });
      expect(res.status).toBe(401);
    }),
    { numRuns: 300 },
  );
  expect(await snapshot(bridge)).toBe(before);
});

test("admin PUT bodies of any shape get 200 or 400; a 400 leaves the store as it was", async () => {
  const bridge = await start();
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.json(), fc.string()), async (raw) => {
      tried.admin++;
      const before = await snapshot(bridge);
      const res = await bridge.admin("/api/admin/locations/loc-1/config", { method: "PUT", body: raw });
      expect([200, 400]).toContain(res.status);
      if (res.status === 400) expect(await snapshot(bridge)).toBe(before);
    }),
    { numRuns: 300 },
  );
});

test("any location id in the path gets a clean 4xx or 200, never a 5xx", async () => {
  const bridge = await start();
  await fc.assert(
    fc.asyncProperty(fc.string({ minLength: 1 }), async (id) => {
      tried.paths++;
      const res = await bridge.admin(`/api/admin/locations/${encodeURIComponent(id)}/config`);
      expect(res.status).toBeLessThan(500);
      if (id !== "loc-1") expect([400, 404]).toContain(res.status);
    }),
    { numRuns: 300 },
  );
});

test("phone normalization never throws and yields 09XXXXXXXXX or nothing", () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.stringMatching(/^\+?6?3?0?9\d{0,12}$/)), (phone) => {
      tried.phones++;
      const local = toLocalPH(phone);
      if (local !== undefined) expect(local).toMatch(/^09\d{9}$/);
    }),
    { numRuns: 2000 },
  );
});

test("the CLI answers any arguments with exit code 0, 1 or 2 and never throws", async () => {
  const bridge = await start();
  const word = fc.oneof(
    fc.constantFrom("locations", "list", "config", "get", "set", "token", "refresh", "install-url", "--json", "--all", "--force", "--sender-id", "--sms-api-key", "--db", "--env-file", "--help"),
    fc.string(),
  );
  const env = commandEnv({ DATABASE_PATH: bridge.config.databasePath });
  await fc.assert(
    fc.asyncProperty(fc.array(word, { maxLength: 6 }), async (argv) => {
      fc.pre(!argv.includes("serve")); // a random `serve` would start a real server
      tried.cli++;
      const out: string[] = [];
      const code = await run(argv, { out: (t) => out.push(t), err: (t) => out.push(t), env });
      expect([0, 1, 2]).toContain(code);
    }),
    { numRuns: 300 },
  );
});
