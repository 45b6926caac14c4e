import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import * as c from "../../src/core/alerts/conditions.ts";
import { describeConfig } from "../../src/core/config-describe.ts";
import { loadConfig } from "../../src/core/config.ts";
import { ConfigError } from "../../src/errors.ts";
import type { GatewayKey } from "../../src/db/gateway-keys.ts";
import type { AlertHealth } from "../../src/db/alerts.ts";
import { checkAlerts } from "../../src/core/operator/doctor/alerts.ts";
import { postAlert } from "../../src/core/clients/alert-webhook.ts";
import { startFakeWebhook } from "../helpers/fake-webhook.ts";

const key = (fields: Partial<GatewayKey>): GatewayKey => ({
  keyTag: "0123456789abcdef",
  keyMasked: "cast_live_se...",
  heldSince: null,
  heldStatus: null,
  heldReason: null,
  balance: null,
  balanceAt: null,
  balanceError: null,
  ...fields,
});
const users = new Map([["0123456789abcdef", ["SMS_API_KEY", "loc-1"]]]);

describe("each condition's key and text say what is wrong and what to do", () => {
  test.each([
    [402, "no credit"],
    [403, "account inactive or key refused"],
    [401, "key refused"],
  ])("a key held for a %i is on hold for %s", (status, why) => {
    const [held] = c.holdConditions([key({ heldSince: 1, heldStatus: status, heldReason: "Insufficient credits" })], users);
    expect(held).toEqual({
      key: "hold:0123456789abcdef",
      title: `Cast key 0123456789abcdef on hold (${why})`,
      text: `Cast key 0123456789abcdef on hold (${why}): Cast refused it ("Insufficient credits"); the messages of SMS_API_KEY (the default key), location loc-1 wait. Top up or reactivate the Cast account, or give the location a working key: \`bridge config set LOCATION --sms-api-key -\` (SMS_API_KEY for the default key).`,
    });
  });

  test("an outage waits its minute of grace; a phone's names the phone's device and what to check", () => {
    const outage = { since: 0, kind: "timeout" as const, reason: "no answer from 10.0.0.5:8080 within 30 s (timeout)", failedCalls: 3, waitingMessages: 2 };
    const [cast, phone] = c.outageConditions([
      { ...outage, remote: "cast" },
      { ...outage, remote: "phone:dev-1" },
    ]);
    expect(cast).toMatchObject({ key: "outage:cast", title: "Cast.ph unreachable", graceMs: 60_000 });
    expect(phone).toMatchObject({ key: "outage:phone:dev-1", title: "phone dev-1 not answering", graceMs: 60_000 });
    expect(phone?.text).toContain("Check that the phone is on, online and running SMS Gateway for Android");
  });

  test("a balance below LOW_BALANCE_CREDITS, and none at or above it or when 0 turns the warning off", () => {
    expect(c.balanceConditions([key({ balance: 499 })], users, 500)).toHaveLength(1);
    expect(c.balanceConditions([key({ balance: 500 })], users, 500)).toEqual([]);
    expect(c.balanceConditions([key({ balance: 1 })], users, 0)).toEqual([]);
  });

  test("an uninstalled location is no alert; one pending approval names the command", () => {
    const found = c.attentionConditions([
      { location_id: "loc-1", reason: "uninstalled at 2026-01-01T00:00:00.000Z: reinstall the app to send again" },
      { location_id: "loc-2", reason: "pending: not approved to use SMS_API_KEY and has no key of its own" },
      { location_id: "loc-3", reason: "needs a reinstall: invalid_grant" },
    ]);
    expect(found.map((f) => f.key)).toEqual(["location:loc-2", "location:loc-3"]);
    expect(found[0]?.text).toContain("`bridge locations approve loc-2`");
  });

  test("unrouted replies and a refused write, each one condition however many", () => {
    expect(c.unroutedConditions(0)).toEqual([]);
    expect(c.unroutedConditions(3)[0]?.text).toMatch(/^3 replies could not be routed to a location and wait\./);
    expect(c.writeConditions(undefined)).toEqual([]);
    expect(c.writeConditions({ since: 1, reason: "database or disk is full" })[0]?.key).toBe("database:write");
  });
});

test.each([
  [7_999, []],
  [8_000, ["cap80:loc-1"]],
  [10_000, ["cap80:loc-1", "cap100:loc-1"]],
])("a location that used %i of its 10000-part cap holds %j", (used, keys) => {
  const found = c.capConditions([{ locationId: "loc-1", cap: 10_000, used }]);
  expect(found.map((f) => f.key)).toEqual(keys);
  for (const f of found) expect(f.text).toContain("`bridge config set loc-1 --monthly-cap PARTS`");
});

describe("ALERT_WEBHOOK_URL", () => {
  const env = { BASE_URL: "https://bridge.example.com", CRM_CLIENT_ID: "0123456789abcdef01234567-mhq8v1x2", CRM_CLIENT_SECRET: "s" };
  const load = (url: string) => loadConfig({ ...env, ALERT_WEBHOOK_URL: url }, "serve");

  test.each([
    "https://hooks.slack.com/services/T000/B000/XXXX",
    "https://discord.com/api/webhooks/123/abc/slack",
    "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k&token=t",
    "http://127.0.0.1:8065/hooks/abc",
    "http://localhost:9000/hook",
    "http://[::1]:9000/hook",
  ])("takes %s", (url) => {
    expect(load(url).alertWebhookUrl).toBe(new URL(url).href);
  });

  test.each(["http://hooks.slack.com/services/T/B/X", "ftp://example.com/x", "hooks.slack.com/services/T/B/X"])("refuses %s", (url) => {
    expect(() => load(url)).toThrow(ConfigError);
  });

  test("serve's start line shows only the host: the URL is a secret", () => {
    const described = describeConfig(load("https://hooks.slack.com/services/T000/B000/secret-token"));
    expect(described.ALERT_WEBHOOK_URL).toBe("(set: alerts to hooks.slack.com)");
    expect(describeConfig(loadConfig(env, "serve")).ALERT_WEBHOOK_URL).toBe("(unset: no alerts)");
  });
});

describe("doctor's alerts line", () => {
  const health = (h: Partial<AlertHealth>) => ({ health: async (): Promise<AlertHealth> => ({ waiting: 0, lastDeliveredAt: null, lastError: null, lastErrorAt: null, ...h }) });
  const url = "https://hooks.slack.com/services/T000/B000/secret-token";

  test.each([
    ["", {}, "warn", "ALERT_WEBHOOK_URL not set: nobody is told when something needs a person (docs/alerts.md)"],
    [url, { lastDeliveredAt: 0 }, "ok", "to hooks.slack.com: 0 waiting, last delivered 1970-01-01T00:00:00.000Z"],
    [
      url,
      { waiting: 2, lastError: "hooks.slack.com:443 answered 404: no_service", lastErrorAt: 0 },
      "warn",
      "to hooks.slack.com: 2 waiting, last delivered never, last error at 1970-01-01T00:00:00.000Z: hooks.slack.com:443 answered 404: no_service; `bridge alerts test` tries the webhook now",
    ],
  ] as const)("%j %j: %s", async (alertWebhookUrl, h, status, detail) => {
    expect(await checkAlerts({ alertWebhookUrl }, health(h))).toEqual({ check: "alerts", status, detail });
  });
});

test("outside words in an alert reach the receiver inert: no channel mention, no link", async () => {
  const webhook = await startFakeWebhook();
  try {
    const quoted = 'Cast key x on hold: Cast refused it ("<!channel> <https://evil.example|top up here> @everyone [click](https://evil.example) <users/all>")';
    expect(await postAlert(webhook.url, quoted)).toEqual({ ok: true });
    const [text = ""] = webhook.delivered;
    expect(text).not.toMatch(/[<>]|@(everyone|here|channel|all)\b|\]\(/i);
    expect(text).toBe('Cast key x on hold: Cast refused it ("\u2039!channel\u203a \u2039https://evil.example|top up here\u203a @\u200beveryone [click]\u200b(https://evil.example) \u2039users/all\u203a")');
  } finally {
    await webhook.close();
  }
});

test("a receiver's endless answer is read no further than its first bytes: the alert is taken at once", async () => {
  const chunk = Buffer.alloc(64 * 1024, "o");
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    const more = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once("drain", more);
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T/B/secret`;
    const started = Date.now();
    expect(await postAlert(url, "a test alert", Date.now, 3_000)).toEqual({ ok: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test("a receiver that echoes its URL in a refusal shows none of its token in the reason", async () => {
  const server = http.createServer((req, res) => {
    res.writeHead(404, { "content-type": "text/plain" });
    res.end(`no_service: ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/spaces/AAAA/messages?key=secret-chat-key&token=secret-chat-token`;
    const post = await postAlert(url, "a test alert");
    expect(post).toMatchObject({ ok: false, reason: expect.stringMatching(/^127\.0\.0\.1:\d+ answered 404: no_service: \/v1\/spaces\/AAAA\/\*\*\*\?key=\*\*\*&token=\*\*\*$/) });
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
