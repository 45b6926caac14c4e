import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import {
  APP_ID,
  GLOBAL_SMS_KEY,
  outbound,
  signBody,
  bridgePerTest,
  waitFor,
  type Bridge,
} from "../helpers/bridge.ts";
import { rawExchange } from "../helpers/http.ts";
import { sqliteOnly } from "../helpers/test-store.ts";

function pem(key: KeyObject): string {
  return key.export({ type: "spki", format: "pem" }).toString();
}

/** POSTs raw bytes to the webhook with exactly the headers given (no signing of our own). */
function postRaw(bridge: Bridge, raw: string, headers: Record<string, string>) {
  return bridge.fetch("/webhooks/crm", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: raw });
}

/** A request body that arrives in chunks, so the server cannot rely on Content-Length. */
function streamOf(text: string, chunk: number): ReadableStream<Uint8Array> {
  const bytes = Buffer.from(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + chunk));
      at += chunk;
    },
  });
}

async function expectRefused(res: Response) {
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: "invalid webhook signature" });
}

async function expectAccepted(res: Response) {
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: "accepted" });
}

describe("webhook signature: Ed25519 (the configured default key)", () => {
  const start = bridgePerTest();

  sqliteOnly("reads the job on a second SQLite connection (openDb)")("a valid x-ghl-signature is accepted and the job is committed before the response arrives", async () => {
    const bridge = await start({ worker: false });
    await expectAccepted(await bridge.webhook(outbound("m-1")));

    expect(await bridge.core.jobs.get("m-1")).toMatchObject({
      state: "queued",
      message: { messageId: "m-1", locationId: "loc-1", phone: "+639171234567", message: "hello m-1", contactId: "contact-1" },
    });
    // Committed, not just visible to the server's own connection: a second connection sees it.
    const other = openDb(bridge.config.databasePath);
    try {
      const row = other.prepare("SELECT message_id, state FROM jobs WHERE message_id = ?").get("m-1");
      expect(row).toEqual({ message_id: "m-1", state: "queued" });
    } finally {
      other.close();
    }
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });

  test("a valid Ed25519 signature on the legacy x-wh-signature header is accepted too", async () => {
    const bridge = await start({ worker: false });
    await expectAccepted(await bridge.webhook(outbound("m-legacy"), { header: "x-wh-signature" }));
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });

  test('x-ghl-signature "N/A" with a valid x-wh-signature is accepted', async () => {
    const bridge = await start({ worker: false });
    const raw = JSON.stringify(outbound("m-na"));
    const res = await postRaw(bridge, raw, {
      "x-ghl-signature": "N/A",
      "x-wh-signature": signBody(raw, bridge.signingKey),
    });
    await expectAccepted(res);
    expect((await bridge.core.jobs.get("m-na"))?.state).toBe("queued");
  });

  test("an invalid x-ghl-signature does not hide a valid x-wh-signature", async () => {
    const bridge = await start({ worker: false });
    const raw = JSON.stringify(outbound("m-both"));
    const wrong = generateKeyPairSync("ed25519").privateKey;
    const res = await postRaw(bridge, raw, {
      "x-ghl-signature": signBody(raw, wrong),
      "x-wh-signature": signBody(raw, bridge.signingKey),
    });
    await expectAccepted(res);
  });
});

describe("webhook signature: ECDSA P-256 key (the spec's scheme)", () => {
  const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const startWith = bridgePerTest();
  const start = () => startWith({ worker: false, env: { CRM_WEBHOOK_PUBLIC_KEY: pem(ec.publicKey) } });

  test("a DER-encoded ECDSA/SHA-256 signature on x-ghl-signature is accepted", async () => {
    const bridge = await start();
    const raw = JSON.stringify(outbound("m-ec"));
    const signature = signBody(raw, ec.privateKey);
    // The harness signs with node's default dsaEncoding: DER, a SEQUENCE (0x30), not raw r||s (64 bytes).
    const bytes = Buffer.from(signature, "base64");
    expect(bytes[0]).toBe(0x30);
    expect(bytes[1]).toBe(bytes.length - 2);

    await expectAccepted(await postRaw(bridge, raw, { "x-ghl-signature": signature }));
    expect((await bridge.core.jobs.get("m-ec"))?.state).toBe("queued");
  });

  test("the Ed25519 key of the default harness is no longer trusted", async () => {
    const bridge = await start();
    await expectRefused(await bridge.webhook(outbound("m-ed")));
    expect(await bridge.core.jobs.counts()).toEqual({});
  });

  test("an ECDSA signature over other bytes is refused", async () => {
    const bridge = await start();
    const signature = signBody(JSON.stringify(outbound("m-ec", { message: "original" })), ec.privateKey);
    await expectRefused(await postRaw(bridge, JSON.stringify(outbound("m-ec", { message: "tampered" })), { "x-ghl-signature": signature }));
    expect(await bridge.core.jobs.counts()).toEqual({});
  });
});

describe("webhook signature: RSA key (HighLevel's legacy x-wh-signature)", () => {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const startWith = bridgePerTest();
  const start = () => startWith({ worker: false, env: { CRM_WEBHOOK_PUBLIC_KEY: pem(rsa.publicKey) } });

  test("a PKCS#1 v1.5/SHA-256 signature on x-wh-signature is accepted", async () => {
    const bridge = await start();
    await expectAccepted(await bridge.webhook(outbound("m-rsa"), { key: rsa.privateKey, header: "x-wh-signature" }));
    expect((await bridge.core.jobs.get("m-rsa"))?.state).toBe("queued");
  });

  test("an RSA signature from another key is refused", async () => {
    const bridge = await start();
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    await expectRefused(await bridge.webhook(outbound("m-rsa"), { key: other, header: "x-wh-signature" }));
    expect(await bridge.core.jobs.counts()).toEqual({});
  });
});

describe("webhook signature: several keys in CRM_WEBHOOK_PUBLIC_KEY", () => {
  const first = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const second = generateKeyPairSync("ed25519");
  const startWith = bridgePerTest();
  const start = () => startWith({ worker: false, env: { CRM_WEBHOOK_PUBLIC_KEY: `${pem(first.publicKey)}\n${pem(second.publicKey)}` } });

  test.each([
    { name: "the second key (Ed25519) on x-ghl-signature", key: () => second.privateKey, header: "x-ghl-signature" },
    { name: "the first key (RSA) on x-wh-signature", key: () => first.privateKey, header: "x-wh-signature" },
  ])("$name is accepted", async ({ key, header }) => {
    const bridge = await start();
    expect(bridge.config.crm.webhookKeys).toHaveLength(2);
    await expectAccepted(await bridge.webhook(outbound("m-multi"), { key: key(), header }));
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });
});

describe("webhook signature: fail closed", () => {
  const start = bridgePerTest();

  /** Each case yields the raw body sent and the headers it is sent with. */
  const cases: { name: string; request: (bridge: Bridge) => { raw: string; headers: Record<string, string> } }[] = [
    { name: "no signature header", request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: {} }) },
    { name: 'x-ghl-signature "N/A"', request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: { "x-ghl-signature": "N/A" } }) },
    {
      name: 'both headers "N/A"',
      request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: { "x-ghl-signature": "N/A", "x-wh-signature": "N/A" } }),
    },
    { name: "an empty signature", request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: { "x-ghl-signature": "" } }) },
    {
      name: "a signature by another Ed25519 key",
      request: () => {
        const raw = JSON.stringify(outbound("m-1"));
        return { raw, headers: { "x-ghl-signature": signBody(raw, generateKeyPairSync("ed25519").privateKey) } };
      },
    },
    {
      name: "a signature by another key on the legacy header",
      request: () => {
        const raw = JSON.stringify(outbound("m-1"));
        return { raw, headers: { "x-wh-signature": signBody(raw, generateKeyPairSync("ed25519").privateKey) } };
      },
    },
    {
      name: "the body changed after signing",
      request: (bridge) => ({
        raw: JSON.stringify(outbound("m-1", { message: "send 1000 pesos" })),
        headers: { "x-ghl-signature": signBody(JSON.stringify(outbound("m-1", { message: "hello" })), bridge.signingKey) },
      }),
    },
    {
      name: "a truncated signature",
      request: (bridge) => {
        const raw = JSON.stringify(outbound("m-1"));
        return { raw, headers: { "x-ghl-signature": signBody(raw, bridge.signingKey).slice(0, -8) } };
      },
    },
    {
      name: "a signature of the re-serialized body (other whitespace)",
      request: (bridge) => {
        const body = outbound("m-1");
        return { raw: JSON.stringify(body), headers: { "x-ghl-signature": signBody(JSON.stringify(body, null, 2), bridge.signingKey) } };
      },
    },
    { name: "garbage base64", request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: { "x-ghl-signature": "!!not*base64~~" } }) },
    {
      name: "64 zero bytes as a signature",
      request: () => ({ raw: JSON.stringify(outbound("m-1")), headers: { "x-ghl-signature": Buffer.alloc(64).toString("base64") } }),
    },
    {
      name: "a valid signature on a header bridge does not read",
      request: (bridge) => {
        const raw = JSON.stringify(outbound("m-1"));
        return { raw, headers: { "x-signature": signBody(raw, bridge.signingKey) } };
      },
    },
  ];

  test.each(cases)("$name: 401, nothing stored, nothing sent", async ({ request }) => {
    const bridge = await start();
    await bridge.install("loc-1"); // so that an accepted message would really be sent
    const { raw, headers } = request(bridge);
    await expectRefused(await postRaw(bridge, raw, headers));

    expect(await bridge.core.jobs.counts()).toEqual({});
    expect(await bridge.core.jobs.get("m-1")).toBeUndefined();
    await sleep(100); // a window in which a message queued all the same would be sent: none may
    expect(bridge.gateway.sent()).toEqual([]);
    expect(bridge.crm.statusReports()).toEqual([]);
  });

  test("an unsigned UNINSTALL is refused and the location's record stays", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await expectRefused(await bridge.webhook({ type: "UNINSTALL", appId: APP_ID, locationId: "loc-1" }, { key: null }));
    expect(await bridge.core.tokens.get("loc-1")).toMatchObject({ locationId: "loc-1" });
  });
});

describe("webhook payloads (signed)", () => {
  const start = bridgePerTest();

  test.each([
    { name: "not JSON", raw: "type=SMS&messageId=m-1" },
    { name: "truncated JSON", raw: JSON.stringify(outbound("m-1")).slice(0, 40) },
    { name: "an empty body", raw: "" },
    { name: "a JSON array", raw: JSON.stringify([outbound("m-1")]) },
    { name: "a JSON string", raw: JSON.stringify("SMS") },
    { name: "a JSON number", raw: "42" },
    { name: "JSON null", raw: "null" },
    { name: "an object without type", raw: JSON.stringify({ messageId: "m-1", locationId: "loc-1" }) },
    { name: "a non-string type", raw: JSON.stringify({ type: 1, messageId: "m-1" }) },
  ])("$name: 400 with a JSON error, nothing queued", async ({ raw }) => {
    const bridge = await start({ worker: false });
    const res = await bridge.webhook(undefined, { raw });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(await bridge.core.jobs.counts()).toEqual({});
  });

  test.each([
    { field: "messageId", change: { messageId: undefined } },
    { field: "locationId", change: { locationId: undefined } },
    { field: "phone", change: { phone: undefined } },
    { field: "messageId", change: { messageId: "" } },
    { field: "locationId", change: { locationId: "   " } },
    { field: "phone", change: { phone: 639171234567 } },
  ])("SMS with $field = $change.$field: 400 naming $field", async ({ field, change }) => {
    const bridge = await start({ worker: false });
    const res = await bridge.webhook(outbound("m-1", change));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string };
    expect(body.error).toContain(field);
    expect(await bridge.core.jobs.counts()).toEqual({});
  });

  test.each(["Email", "WhatsApp", "GMB", "INSTALL", "sms", "X".repeat(500)])("type %s: 200 ignored, nothing queued", async (type) => {
    const bridge = await start({ worker: false });
    const res = await bridge.webhook(outbound("m-1", { type }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ignored" });
    expect(await bridge.core.jobs.counts()).toEqual({});
  });

  test("the same messageId twice: both 200 accepted, one job", async () => {
    const bridge = await start({ worker: false });
    await expectAccepted(await bridge.webhook(outbound("m-dup")));
    await expectAccepted(await bridge.webhook(outbound("m-dup", { message: "a retry with other text" })));
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
    expect((await bridge.core.jobs.get("m-dup"))?.message.message).toBe("hello m-dup");
  });

  test("the same messageId concurrently: all 200 accepted, one job", async () => {
    const bridge = await start({ worker: false });
    const responses = await Promise.all(Array.from({ length: 5 }, () => bridge.webhook(outbound("m-race"))));
    for (const res of responses) await expectAccepted(res);
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });

  test.each([
    { name: "with Content-Length", chunked: false },
    { name: "chunked, without Content-Length", chunked: true },
  ])("a signed body one byte over 256 KiB ($name) is refused with 413", async ({ chunked }) => {
    const bridge = await start({ worker: false });
    const base = JSON.stringify(outbound("m-big", { message: "" }));
    const raw = JSON.stringify(outbound("m-big", { message: "x".repeat(256 * 1024 + 1 - Buffer.byteLength(base)) }));
    expect(Buffer.byteLength(raw)).toBe(256 * 1024 + 1);
    const headers = { "content-type": "application/json", "x-ghl-signature": signBody(raw, bridge.signingKey) };
    const body = chunked ? streamOf(raw, 64 * 1024) : raw;
    const res = await bridge.fetch("/webhooks/crm", { method: "POST", headers, body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(await bridge.core.jobs.counts()).toEqual({});
  });

  test("a declared 10 GB body gets 413 at once and the connection is closed: none of it is read", async () => {
    const bridge = await start({ worker: false });
    const answer = await rawExchange(bridge.url, "POST /webhooks/crm HTTP/1.1\r\nhost: bridge\r\ncontent-length: 10737418240\r\n\r\n{");
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).not.toMatch(/\(open\)$/);
  });

  test("a client that hangs up mid-body is no server error, and stores nothing", async () => {
    const bridge = await start({ worker: false });
    const raw = JSON.stringify(outbound("m-cut"));
    const signature = signBody(raw, bridge.signingKey);
    for (const framing of [`content-length: ${raw.length}\r\n\r\n`, "transfer-encoding: chunked\r\n\r\n14\r\n"]) {
      const head = `POST /webhooks/crm HTTP/1.1\r\nhost: bridge\r\nx-ghl-signature: ${signature}\r\n${framing}${raw.slice(0, 20)}`;
      expect(await rawExchange(bridge.url, head, 200)).toBe("(open)"); // bridge waits for the rest; we hang up
    }
    await waitFor(() => bridge.bodyBudget.used === 0); // bridge saw both hang-ups: their bodies' share is back
    expect(bridge.unhandled).toEqual([]);
    expect(bridge.logs.join("\n")).not.toMatch(/unhandled|\[error\]/);
    expect(await bridge.core.jobs.counts()).toEqual({});
    await expectAccepted(await bridge.webhook(outbound("m-after")));
  });

  test("a signed body of exactly 256 KiB is within the limit and accepted", async () => {
    const bridge = await start({ worker: false });
    const base = JSON.stringify(outbound("m-edge", { padding: "" }));
    const raw = JSON.stringify(outbound("m-edge", { padding: "p".repeat(256 * 1024 - Buffer.byteLength(base)) }));
    expect(Buffer.byteLength(raw)).toBe(256 * 1024);
    await expectAccepted(await bridge.webhook(undefined, { raw }));
    expect((await bridge.core.jobs.get("m-edge"))?.state).toBe("queued");
  });

  sqliteOnly("makes the write fail with a SQLite TRIGGER")("when the database cannot store the job: 429 with Retry-After, never 500; a retry later is accepted", async () => {
    const bridge = await start({ worker: false });
    bridge.core.db.exec("CREATE TRIGGER nojobs BEFORE INSERT ON jobs BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
    const res = await bridge.webhook(outbound("m-io"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    expect(await bridge.core.jobs.counts()).toEqual({});

    bridge.core.db.exec("DROP TRIGGER nojobs");
    await expectAccepted(await bridge.webhook(outbound("m-io")));
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });

  test("GET /webhooks/crm is not a server error", async () => {
    const bridge = await start({ worker: false });
    const res = await bridge.fetch("/webhooks/crm");
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await bridge.core.jobs.counts()).toEqual({});
  });
});

describe("webhook group commit", () => {
  // A window no test waits out: an answer that needed it would time the test out.
  const start = bridgePerTest();

  test("a lone webhook is committed and answered at once, without waiting out the window", async () => {
    const bridge = await start({ worker: false, tuning: { commitWindowMs: 60_000 } });
    await expectAccepted(await bridge.webhook(outbound("m-1")));
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 1 });
  });

  sqliteOnly("SQLite's group commit (src/db/commit.ts): on PostgreSQL each enqueue commits alone")("a verified webhook waits while another is still arriving; the last to arrive commits both", async () => {
    const bridge = await start({ worker: false, tuning: { commitWindowMs: 60_000 } });
    const raw = JSON.stringify(outbound("m-slow"));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const half = Math.floor(raw.length / 2);
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(Buffer.from(raw.slice(0, half)));
        await released;
        controller.enqueue(Buffer.from(raw.slice(half)));
        controller.close();
      },
    });
    const headers = { "content-type": "application/json", "x-ghl-signature": signBody(raw, bridge.signingKey) };
    const slow = bridge.fetch("/webhooks/crm", { method: "POST", headers, body, duplex: "half" } as RequestInit);
    await waitFor(() => bridge.bodyBudget.used > 0); // the server is reading m-slow's body

    const fast = bridge.webhook(outbound("m-fast"));
    // A window in which m-fast must not be answered: its commit waits for m-slow's.
    const early = await Promise.race([fast.then(() => "answered"), sleep(300).then(() => "waiting")]);
    expect(early).toBe("waiting");
    expect(await bridge.core.jobs.get("m-fast")).toBeUndefined(); // not committed, so not acknowledged

    release();
    await expectAccepted(await slow);
    await expectAccepted(await fast);
    expect(await bridge.core.jobs.counts()).toEqual({ queued: 2 });
  });
});

describe("webhook processing with the worker running", () => {
  const start = bridgePerTest();

  test("the same messageId twice: the gateway receives exactly one SMS", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await expectAccepted(await bridge.webhook(outbound("m-dup")));
    await waitFor(() => bridge.crm.statusReports().length >= 1);
    await expectAccepted(await bridge.webhook(outbound("m-dup")));
    await sleep(250); // a window in which a second SMS or report must not happen

    expect(bridge.gateway.sent()).toEqual([{ apiKey: GLOBAL_SMS_KEY, to: "09171234567", message: "hello m-dup" }]);
    expect(bridge.crm.statusReports()).toHaveLength(1);
    expect(await bridge.core.jobs.counts()).toEqual({ done: 1 });
  });

  test("the same messageId twice back to back: exactly one SMS", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    const [a, b] = await Promise.all([bridge.webhook(outbound("m-twin")), bridge.webhook(outbound("m-twin"))]);
    await expectAccepted(a!);
    await expectAccepted(b!);
    await waitFor(() => bridge.crm.statusReports().length >= 1);
    await sleep(250); // a window in which a second SMS or report must not happen
    expect(bridge.gateway.sent()).toHaveLength(1);
    expect(bridge.crm.statusReports()).toHaveLength(1);
  });

  test("a messageId seen before is never sent again, even after its job was cleaned up", async () => {
    const bridge = await start();
    await bridge.install("loc-1");
    await expectAccepted(await bridge.webhook(outbound("m-old")));
    await waitFor(async () => (await bridge.core.jobs.get("m-old"))?.state === "done");
    // The clean-up removes finished jobs after 30 days; here, now.
    expect(await bridge.core.jobs.prune(Date.now() + 1, 1000)).toBe(1);
    expect(await bridge.core.jobs.get("m-old")).toBeUndefined();

    await expectAccepted(await bridge.webhook(outbound("m-old")));
    await expectAccepted(await bridge.webhook(outbound("m-new")));
    await waitFor(async () => (await bridge.core.jobs.get("m-new"))?.state === "done");
    expect(await bridge.core.jobs.get("m-old")).toBeUndefined();
    expect(bridge.gateway.sent().map((s) => s.message)).toEqual(["hello m-old", "hello m-new"]);
  });
});
