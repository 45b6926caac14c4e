import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { chromium, type Browser, type FrameLocator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encryptUser, highLevelUser, SHARED_SECRET } from "../helpers/app-payload.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { e2eSetup, runWithStdin, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { castError, SEND } from "../helpers/fake-gateway.ts";
import { DEVICE, PHONE_PASSWORD, PHONE_USER, startFakePhone, type FakePhone } from "../helpers/fake-phone.ts";

/**
 * The settings page in a real Chromium (Debian's package), framed by a parent page that
 * plays HighLevel's part: served over HTTPS (the page may be framed by HTTPS origins only)
 * and answering REQUEST_USER_DATA with a payload crypto-js encrypted, as HighLevel does.
 * loc-1 is an admin's location (it gets its own key), loc-2 sends on the agency's shared
 * key (and is the attacker's), loc-3 sends through a phone.
 */
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const found = existsSync(executablePath);
if (!found) console.log(`app-page browser test skipped: no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM_PATH)`);

let e2e: E2E;
let server: Serve;
let phone: FakePhone;
let parent: Server;
let parentUrl: string;
let attackerUrl: string;
let browser: Browser;

/** Who the parent frame says is signed in, by the path it is opened at. */
const payloads: Record<string, () => string> = {
  "/admin": () => encryptUser(highLevelUser()),
  // Other admins of loc-1, one a test: the server allows each user so many calls a minute.
  "/admin-2": () => encryptUser(highLevelUser({ userId: "Adm2loc1user0000000" })),
  "/admin-3": () => encryptUser(highLevelUser({ userId: "Adm3loc1user0000000" })),
  "/victim": () => encryptUser(highLevelUser({ userId: "Victimloc1user00000" })),
  "/user": () => encryptUser(highLevelUser({ role: "user", userId: "Xq2user000000000000" })),
  "/forged": () => encryptUser(highLevelUser(), "an-outsider-guessing-the-secret"),
  "/tenant": () => encryptUser(highLevelUser({ activeLocation: "loc-2", userId: "Tn2admin00000000000" })),
  "/phone": () => encryptUser(highLevelUser({ activeLocation: "loc-3", userId: "Ph3admin00000000000" })),
};
/** The attacker's own sign-in: valid, for the location the attacker installed the app in. */
const attackerPayload = () => encryptUser(highLevelUser({ activeLocation: "loc-2", userId: "Att4cker00000000000" }));

beforeAll(async () => {
  if (!found) return;
  e2e = await e2eSetup("app-page", { CRM_SHARED_SECRET: SHARED_SECRET });
  server = await startServe(e2e.env, e2e.dir);
  phone = await startFakePhone();
  for (const location of ["loc-1", "loc-2", "loc-3"]) {
    e2e.crm.grantLocation(`code-${location}`, location);
    expect((await fetch(`${server.url}/oauth-callback?code=code-${location}`)).status).toBe(200);
  }
  const android = ["config", "set", "loc-3", "--gateway", "android", "--android-url", phone.url, "--android-user", PHONE_USER];
  const set = await runWithStdin(e2e.env, e2e.dir, `${PHONE_PASSWORD}\n`, [...android, "--android-device", DEVICE, "--android-password", "-"]);
  expect(set.err).toBe("");
  parent = await startParent(e2e.dir, server.url);
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--ignore-certificate-errors"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  parent?.close();
  server?.child.kill("SIGKILL");
  await phone?.close();
  await e2e?.close();
});

describe.skipIf(!found)("the settings page in Chromium, framed by a HighLevel stand-in", () => {
  test("an admin sets the own key, picks its sender ID, sends a test SMS and sees it and a failure's reason", async () => {
    e2e.gateway.senderIds([
      { sender_id: "BRIDGE", label: "Bridge", channel: "sms" },
      { sender_id: "MYAPP", label: "Main app sender", channel: "sms" },
    ]);
    expect((await e2e.webhook(server.url, outbound("msg-bad-phone", { locationId: "loc-1", phone: "12345" }))).status).toBe(200);
    const page = await open("/admin", 1280);
    const app = page.frameLocator("#app");
    await app.getByText(/Signed in to .+ as an admin\./).waitFor();
    expect(await app.locator("#location-id").textContent()).toBe("loc-1");

    await app.getByLabel("Your own Cast API key").fill("loc-1-own-cast-key-0123456789");
    await app.getByRole("button", { name: "Replace API key" }).click();
    await app.locator("#key-form .note", { hasText: "API key replaced." }).waitFor();
    await app.locator("#balance", { hasText: "1,000 credits" }).waitFor();

    await app.getByLabel("Sender ID", { exact: true }).selectOption("MYAPP");
    await app.getByRole("button", { name: "Save sender ID" }).click();
    await app.locator("#sender-form .note", { hasText: "Sender ID saved." }).waitFor();
    await app.locator("#sender-in-use", { hasText: "MYAPP" }).waitFor();

    await app.getByLabel("Philippine mobile number").fill("0917 123 4567");
    await app.getByRole("button", { name: "Send test SMS" }).click();
    await app.locator("#test-form .note", { hasText: "Test SMS queued." }).waitFor();
    const sent = await waitFor(() => e2e.gateway.sent().find((s) => s.message === "Test message from the SMS settings page."), 10_000);
    expect(sent).toMatchObject({ sender_id: "MYAPP", to: "09171234567", apiKey: "loc-1-own-cast-key-0123456789" });
    await app.locator("#test-form .note", { hasText: /Test SMS to 0917\*\*\*4567: (delivered|sent)/ }).waitFor({ timeout: 20_000 });
    await untilRow(app, "0917***4567", /delivered|sent/);
    await untilRow(app, "not a Philippine mobile number");
    expect(await app.locator("#status").textContent()).not.toContain("Test SMS");

    await app.getByLabel("Number to opt out").fill("+639179998888");
    await app.getByRole("button", { name: "Add opt-out" }).click();
    await app.locator("#optout-form .note", { hasText: "Opt-out added." }).waitFor();
    // A server that records a location admin's opt-out as the operator's reads "your agency".
    await app.locator("#optouts li", { hasText: /0917\*\*\*8888: added by (a location admin|your agency)/ }).waitFor();

    await shoot(page, screenshot("app-desktop.png"));
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, screenshot("app-phone.png"));
    expect(await app.locator("body").innerText()).not.toMatch(/Reason:?\s*none/i);

    await app.getByLabel("Number to take off the list").fill("09179998888");
    await app.getByRole("button", { name: "Remove opt-out" }).click();
    await app.locator("#optin-form .note", { hasText: "Opt-out removed." }).waitFor();
    await app.getByText("Nobody has opted out.").waitFor();
    await page.close();
  }, 60_000);

  test("a test SMS the gateway refused reads not sent, with its reason, beside the test form", async () => {
    e2e.gateway.on(SEND, (req) =>
      (JSON.parse(req.body) as { message: string }).message === "Please refuse me"
        ? castError(400, "VALIDATION_ERROR", "the message was refused")
        : e2e.gateway.accept(),
    );
    const page = await open("/admin-2", 1280);
    const app = page.frameLocator("#app");
    await app.getByText(/as an admin\./).waitFor();
    await app.getByLabel("Philippine mobile number").fill("09171112222");
    await app.getByLabel("Message", { exact: true }).fill("Please refuse me");
    await app.getByRole("button", { name: "Send test SMS" }).click();
    const said = app.locator("#test-form .note", { hasText: "Test SMS to 0917***2222 not sent: " });
    await said.waitFor({ timeout: 20_000 });
    expect(await said.textContent()).toContain("the message was refused");
    e2e.gateway.on(SEND, () => e2e.gateway.accept());
    await page.close();
  }, 40_000);

  test.each([1000, 0])(
    "a sign-in answer another window posts is ignored: the page signs in to its parent's location only (parent answers after %i ms)",
    async (delay) => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      const opened = page.waitForEvent("popup");
      await page.goto(`${attackerUrl}/attacker?delay=${delay}`);
      const victim = await opened;
      const app = victim.frameLocator("#app");
      await app.getByText(/Signed in to /).waitFor();
      // Long enough for a late answer to have been taken, had the page taken any.
      await new Promise((r) => setTimeout(r, 1500));
      expect(await app.locator("#location-id").textContent()).toBe("loc-1");
      expect(await app.locator("#status").textContent()).toMatch(/as an admin\.$/);
      expect(await page.evaluate("window.posted")).toBeGreaterThan(0);
      await victim.close();
      await page.close();
    },
    30_000,
  );

  test("on the agency's shared key a tenant sees no balance and none of the agency's sender IDs, and its own usage", async () => {
    e2e.gateway.senderIds([{ sender_id: "OTHERTENANT", label: "Another tenant", channel: "sms" }]);
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    // The usage API's agreed answer, stood in for here so the page's rendering is tested whatever the server holds.
    await page.route("**/app/api/usage", (route) =>
      route.fulfill({ json: { month: "2026-05", messages: 12345, parts: 23456, delivered: 12001, failed: 344 } }),
    );
    await page.goto(`${parentUrl}/tenant`);
    const app = page.frameLocator("#app");
    await app.getByText(/as an admin\./).waitFor();
    expect(await app.locator("#location-id").textContent()).toBe("loc-2");
    await app.locator("#balance", { hasText: "SMS provided by your agency" }).waitFor();
    await app.locator("#usage-section", { hasText: "May 2026" }).waitFor();
    expect(await app.locator("#usage-messages").textContent()).toBe("12,345");
    expect(await app.locator("#usage-parts").textContent()).toBe("23,456");
    expect(await app.locator("#usage-delivered").textContent()).toBe("12,001");
    expect(await app.locator("#usage-failed").textContent()).toBe("344");
    await app.locator("#sender-id option").first().waitFor({ state: "attached" });
    expect(await app.locator("#sender-id").innerText()).not.toContain("OTHERTENANT");
    expect(await app.locator("body").innerText()).not.toMatch(/credits/);
    await page.close();
  }, 30_000);

  test("a phone location shows the phone's state, no Cast balance, no sender ID controls and never the phone's address", async () => {
    const page = await open("/phone", 1280);
    const app = page.frameLocator("#app");
    await app.getByText(/as an admin\./).waitFor();
    await app.locator("#phone", { hasText: /Connected|Not reachable/ }).waitFor();
    expect(await app.locator("#gateway").textContent()).toBe("An Android phone");
    expect(await app.locator("#balance").isVisible()).toBe(false);
    expect(await app.locator("#sender-form").isVisible()).toBe(false);
    expect(await app.locator("#key-form").isVisible()).toBe(false);
    const text = await app.locator("body").innerText();
    expect(text).not.toContain(new URL(phone.url).host);
    expect(text).not.toMatch(/credits/);
    await page.close();
  }, 30_000);

  test("a 429 shows the server's message beside the form that was used", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    // The server's answer to an 11th test SMS within the hour, in its error shape, stood in for here.
    await page.route("**/app/api/test-sms", (route) =>
      route.fulfill({ status: 429, headers: { "retry-after": "2400" }, json: { error: "at most 10 test SMS an hour: try again in 40 minutes" } }),
    );
    await page.goto(`${parentUrl}/admin-3`);
    const app = page.frameLocator("#app");
    await app.getByText(/as an admin\./).waitFor();
    await app.getByLabel("Philippine mobile number").fill("09171234567");
    await app.getByRole("button", { name: "Send test SMS" }).click();
    await app.locator("#test-form .note", { hasText: "Test SMS not sent: at most 10 test SMS an hour: try again in 40 minutes" }).waitFor();
    expect(await app.locator("#status").textContent()).not.toContain("test SMS");
    await page.close();
  }, 30_000);

  test("a user sees the settings and no control that changes them", async () => {
    const page = await open("/user", 1280);
    const app = page.frameLocator("#app");
    await app.getByText("Only an admin can change settings.").waitFor();
    await app.locator("#sender-in-use", { hasText: /\S/ }).waitFor();
    expect(await app.locator("form").count()).toBe(0);
    expect(await app.getByRole("button", { name: /Save|Replace|Send|Add/ }).count()).toBe(0);
    await page.close();
  }, 30_000);

  test("an outsider's forged payload is refused", async () => {
    const page = await open("/forged", 1280);
    const app = page.frameLocator("#app");
    await app.getByText("Your HighLevel sign-in could not be verified. Reopen this page from your sub-account's menu in HighLevel").waitFor();
    expect(await app.locator("#status").textContent()).not.toMatch(/refused/i);
    expect(await app.locator("#page").isHidden()).toBe(true);
    await page.close();
  }, 30_000);

  test("opened outside HighLevel, the page says where to open it", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/app`);
    await page.getByText("Open this page from your HighLevel sub-account's menu").waitFor();
    await page.close();
  }, 30_000);
});

/** The README's screenshots are redone with UPDATE_SCREENSHOTS=1; otherwise they go to the test's directory. */
function screenshot(name: string): string {
  return process.env.UPDATE_SCREENSHOTS === "1" ? join("docs", name) : join(e2e.dir, name);
}

async function open(path: string, width: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 1000 } });
  await page.goto(`${parentUrl}${path}`);
  return page;
}

/** Refreshes the page's list until a row holds `text` (the list is read again on request only). */
async function untilRow(app: FrameLocator, text: string, status?: RegExp): Promise<void> {
  for (let tries = 0; tries < 40; tries++) {
    const rows = app.locator("#messages tr", { hasText: text });
    if ((await (status ? rows.filter({ hasText: status }) : rows).count()) > 0) return;
    await app.getByRole("button", { name: "Refresh" }).click();
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no message row holds ${text}`);
}

/**
 * A screenshot of the whole page at the viewport's width: the frame as tall as its page,
 * and the viewport as tall as both (Chromium paints a cross-site frame within the viewport only).
 */
async function shoot(page: Page, path: string): Promise<void> {
  const width = page.viewportSize()?.width ?? 1280;
  await page.locator("#app").evaluate((el) => el.setAttribute("style", "height:300px"));
  const height = await page.frameLocator("#app").locator("body").evaluate((el) => el.scrollHeight);
  await page.locator("#app").evaluate((el, h) => el.setAttribute("style", `height:${h}px`), height);
  await page.setViewportSize({ width, height: height + 40 });
  await page.screenshot({ path });
}

/**
 * HighLevel's part: an HTTPS page framing /app and answering REQUEST_USER_DATA after
 * `?delay=` ms; and, at another origin (localhost), an attacker's page that opens it.
 */
async function startParent(dir: string, bridgeUrl: string): Promise<Server> {
  const key = join(dir, "parent-key.pem");
  const cert = join(dir, "parent-cert.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
  const server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    const delay = Number(url.searchParams.get("delay") ?? 0);
    const html = url.pathname === "/attacker" ? attackerPage(`${parentUrl}/victim?delay=${delay}`) : payloads[url.pathname] && parentPage(bridgeUrl, payloads[url.pathname]!(), delay);
    if (!html) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  parentUrl = `https://127.0.0.1:${port}`;
  attackerUrl = `https://localhost:${port}`;
  return server;
}

function parentPage(bridgeUrl: string, payload: string, delay: number): string {
  return `<!doctype html><html><head><title>HighLevel</title><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{margin:0;font-family:sans-serif}header{background:#155eef;color:#fff;padding:.5rem 1rem}iframe{display:block;width:100%;height:1000px;border:0}</style></head>
<body><header>Sub-account · SMS settings</header>
<iframe id="app" title="SMS settings" src="${bridgeUrl}/app"></iframe>
<script>
window.addEventListener("message", function (event) {
  if (event.data && event.data.message === "REQUEST_USER_DATA") {
    setTimeout(function () {
      event.source.postMessage({ message: "REQUEST_USER_DATA_RESPONSE", payload: ${JSON.stringify(payload)} }, "*");
    }, ${delay});
  }
});
</script></body></html>`;
}

/** Opens HighLevel (the victim's) in a window and posts its own valid sign-in into the framed page, again and again. */
function attackerPage(victimUrl: string): string {
  return `<!doctype html><html><head><title>Attacker</title></head><body>
<script>
window.posted = 0;
var victim = window.open(${JSON.stringify(victimUrl)});
setInterval(function () {
  try {
    if (victim && victim[0]) { victim[0].postMessage({ message: "REQUEST_USER_DATA_RESPONSE", payload: ${JSON.stringify(attackerPayload())} }, "*"); window.posted++; }
  } catch (e) {}
}, 5);
</script></body></html>`;
}
