import { describe, expect, it } from "vitest";
import { SESSION_MS } from "../../src/core/app/sessions.ts";
import { encryptUser, highLevelUser, SHARED_SECRET } from "../helpers/app-payload.ts";
import { bridgePerTest, type Bridge } from "../helpers/bridge.ts";

const start = bridgePerTest();
const env = { CRM_SHARED_SECRET: SHARED_SECRET };

/** A sign-in; `from`: the client's address, as a trusted proxy tells it (with TRUST_PROXY). */
function session(bridge: Bridge, payload: unknown, from?: string) {
  const headers: Record<string, string> = { "content-type": "application/json", ...(from ? { "x-forwarded-for": from } : {}) };
  return bridge.fetch("/app/session", { method: "POST", headers, body: JSON.stringify({ payload }) });
}

/** Client 10.0.i/256.i%256, one address each. */
const address = (i: number) => `10.0.${Math.floor(i / 256)}.${i % 256}`;

/** The page's API with the session token; GET /app/api/settings is the simplest call a session allows. */
function settings(bridge: Bridge, token: string) {
  return bridge.fetch("/app/api/settings", { headers: { authorization: `Bearer ${token}` } });
}

describe("POST /app/session", () => {
  it("signs in a user whose payload opens with CRM_SHARED_SECRET: a token bound to the location, 15 minutes", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const bridge = await start({ env, now: () => clock }, "loc-1");
    const res = await session(bridge, encryptUser(highLevelUser()));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; expires_at: string; location_id: string; role: string };
    expect(body).toMatchObject({ location_id: "loc-1", role: "admin", expires_at: "2026-01-01T00:15:00.000Z" });
    expect(body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await settings(bridge, body.token)).status).toBe(200);

    clock += SESSION_MS;
    const expired = await settings(bridge, body.token);
    expect(expired.status).toBe(401);
    expect(await expired.json()).toEqual({ error: "session expired or unknown: reload the page" });
  });

  it("a session opened through one server works on another on the same database, and survives a restart", async () => {
    const first = await start({ env }, "loc-1");
    const res = await session(first, encryptUser(highLevelUser()));
    expect(res.status).toBe(200);
    const { token } = (await res.json()) as { token: string };
    const second = await start({ env: { ...env, DATABASE_PATH: first.config.databasePath } });
    expect((await settings(second, token)).status).toBe(200);
    await first.close();
    expect((await settings(second, token)).status).toBe(200);
    expect((await settings(second, `${token}x`)).status).toBe(401);
  });

  it.each([
    ["a wrong secret", () => encryptUser(highLevelUser(), "not-the-shared-secret"), "does not open with CRM_SHARED_SECRET"],
    ["an unencrypted payload", () => JSON.stringify(highLevelUser()), "does not open with CRM_SHARED_SECRET"],
    ["a tampered payload", () => tamper(encryptUser(highLevelUser())), "payload"],
    ["an unknown location", () => encryptUser(highLevelUser({ activeLocation: "loc-unknown" })), "location loc-unknown is not installed"],
    ["no payload", () => undefined, "no encrypted payload"],
    ["an activeLocation that is no id", () => encryptUser(highLevelUser({ activeLocation: "loc/../x\u001b[31m" })), "activeLocation is not an id"],
  ])("refuses %s: 401 and a warn line without the payload", async (_, payload, reason) => {
    const bridge = await start({ env }, "loc-1");
    const sent = payload();
    const res = await session(bridge, sent);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "the sign-in could not be verified: open this page from HighLevel" });
    const line = bridge.logs.find((l) => l.includes("settings page sign-in refused"));
    expect(line).toContain(reason);
    expect(line).toContain("[warn]");
    if (sent) expect(bridge.logs.join("\n")).not.toContain(sent.slice(0, 24));
    expect(bridge.logs.join("\n")).not.toContain("John Doe");
  });

  it("refuses a payload whose company is not the location's", async () => {
    const bridge = await start({ env }, "loc-1");
    const res = await session(bridge, encryptUser(highLevelUser({ companyId: "another-agency" })));
    expect(res.status).toBe(401);
    expect(bridge.logs.join("\n")).toContain("location loc-1 is not of the payload's company");
  });

  it("refuses a location the app was uninstalled from", async () => {
    const bridge = await start({ env }, "loc-1");
    await bridge.core.tokens.markUninstalled("loc-1", Date.now());
    const res = await session(bridge, encryptUser(highLevelUser()));
    expect(res.status).toBe(401);
    expect(bridge.logs.join("\n")).toContain("location loc-1 is uninstalled");
  });

  it("refuses every sign-in while CRM_SHARED_SECRET is unset", async () => {
    const bridge = await start({}, "loc-1");
    expect((await session(bridge, encryptUser(highLevelUser()))).status).toBe(401);
    expect(bridge.logs.join("\n")).toContain("CRM_SHARED_SECRET is not set");
  });

  it("logs at most 100 refusals a minute, and says when it stops", async () => {
    const bridge = await start({ env: { ...env, TRUST_PROXY: "1" } }, "loc-1");
    // Each of a different length (the logger folds repeated identical lines into one), from its own address.
    for (let i = 1; i <= 105; i++) expect((await session(bridge, "x".repeat(i), address(i))).status).toBe(401);
    expect(bridge.logs.filter((l) => l.includes("settings page sign-in refused"))).toHaveLength(100);
    expect(bridge.logs.filter((l) => l.includes("more than 100 refused settings page sign-ins"))).toHaveLength(1);
  });

  it("refuses a body over 16 KiB before reading it whole, and returns its share of the unsigned budget", async () => {
    const bridge = await start({ env }, "loc-1");
    const res = await session(bridge, "A".repeat(20_000));
    expect(res.status).toBe(413);
    expect(bridge.bodyBudget.used).toBe(0);
  });

  it("a flood of sign-ins with one payload keeps one session for that user, and never signs another user out", async () => {
    const bridge = await start({ env: { ...env, TRUST_PROXY: "1" } }, "loc-1");
    const other = (await (await session(bridge, encryptUser(highLevelUser({ userId: "another-user" })))).json()) as { token: string };
    const payload = encryptUser(highLevelUser());
    const tokens: string[] = [];
    for (let i = 0; i < 300; i++) {
      const res = await session(bridge, payload, address(i));
      expect(res.status).toBe(200);
      tokens.push(((await res.json()) as { token: string }).token);
    }
    expect((await settings(bridge, other.token)).status).toBe(200);
    // The user's last sign-in replaced the ones before it.
    expect((await settings(bridge, tokens.at(-1)!)).status).toBe(200);
    expect((await settings(bridge, tokens[0]!)).status).toBe(401);
  });

  it("takes at most 20 refused sign-ins a minute from one address: then 429 with Retry-After, and other addresses still sign in", async () => {
    let clock = Date.now();
    const bridge = await start({ env: { ...env, TRUST_PROXY: "1" }, now: () => clock }, "loc-1");
    const payload = encryptUser(highLevelUser());
    for (let i = 0; i < 20; i++) expect((await session(bridge, "x", "10.9.9.9")).status).toBe(401);
    const over = await session(bridge, payload, "10.9.9.9");
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(await over.json()).toEqual({ error: "at most 20 refused sign-ins a minute from one address: try again in 60 s" });
    expect((await session(bridge, payload, "10.9.9.10")).status).toBe(200);
    clock += 60_000;
    expect((await session(bridge, payload, "10.9.9.9")).status).toBe(200);
  });

  it("valid sign-ins from one address (users behind one carrier NAT) are not capped: only refused ones count", async () => {
    const bridge = await start({ env: { ...env, TRUST_PROXY: "1" } }, "loc-1");
    for (let i = 0; i < 40; i++) {
      const user = encryptUser(highLevelUser({ userId: `user-${i}` }));
      expect((await session(bridge, user, "10.9.9.9")).status).toBe(200);
    }
  });

  it("an IPv6 client rotating addresses across its /48 shares one count of refused sign-ins", async () => {
    const bridge = await start({ env: { ...env, TRUST_PROXY: "1" } }, "loc-1");
    for (let i = 0; i < 20; i++) expect((await session(bridge, "x", `2001:db8:1:${i.toString(16)}::1`)).status).toBe(401);
    expect((await session(bridge, "x", "2001:db8:1:ff::1")).status).toBe(429);
    expect((await session(bridge, encryptUser(highLevelUser()), "2001:db8:2::1")).status).toBe(200);
  });

  it("refuses the page's calls without a session", async () => {
    const bridge = await start({ env }, "loc-1");
    expect((await bridge.fetch("/app/api/settings")).status).toBe(401);
    expect((await settings(bridge, "made-up-token")).status).toBe(401);
  });
});

/**
 * Flips one bit of the last ciphertext block but one, so CBC garbles the last block's
 * padding or text: either the padding check fails or the text is no longer the user's JSON.
 */
function tamper(payload: string): string {
  const bytes = Buffer.from(payload, "base64");
  const at = bytes.length - 17;
  bytes[at] = (bytes[at] ?? 0) ^ 0x01;
  return bytes.toString("base64");
}
