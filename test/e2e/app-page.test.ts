import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { chromium, type Browser, type FrameLocator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encryptUser, highLevelUser, SHARED_SECRET } from "../helpers/app-payload.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { e2eSetup, startServe, type E2E, type Serve } from "../helpers/binary.ts";

/**
 * The settings page in a real Chromium (Debian's package), framed by a parent page that
 * plays HighLevel's part: served over HTTPS (the page may be framed by HTTPS origins only)
 * and answering REQUEST_USER_DATA with a payload crypto-js encrypted, as HighLevel does.
 */
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const found = existsSync(executablePath);
if (!found) console.log(`app-page browser test skipped: no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM_PATH)`);

let e2e: E2E;
let server: Serve;
let parent: Server;
let parentUrl: string;
let browser: Browser;

/** Who the parent frame says is signed in, by the path it is opened at. */
const payloads: Record<string, () => string> = {
  "/admin": () => encryptUser(highLevelUser()),
  "/user": () => encryptUser(highLevelUser({ role: "user", userId: "Xq2user000000000000" })),
  "/forged": () => encryptUser(highLevelUser(), "an-outsider-guessing-the-secret"),
};

beforeAll(async () => {
  if (!found) return;
  e2e = await e2eSetup("app-page", { CRM_SHARED_SECRET: SHARED_SECRET });
  server = await startServe(e2e.env, e2e.dir);
  e2e.crm.grantLocation("code-a", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-a`)).status).toBe(200);
  parent = await startParent(e2e.dir, server.url);
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--ignore-certificate-errors"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  parent?.close();
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

describe.skipIf(!found)("the settings page in Chromium, framed by a HighLevel stand-in", () => {
  test("an admin signs in, changes the sender ID, sends a test SMS and sees it and a failure's reason", async () => {
    e2e.gateway.senderIds([
      { sender_id: "BRIDGE", label: "Bridge", channel: "sms" },
      { sender_id: "MYAPP", label: "Main app sender", channel: "sms" },
    ]);
    expect((await e2e.webhook(server.url, outbound("msg-bad-phone", { locationId: "loc-1", phone: "12345" }))).status).toBe(200);
    const page = await open("/admin", 1280);
    const app = page.frameLocator("#app");
    await app.getByText("Signed in for location loc-1 as an admin.").waitFor();

    await app.getByLabel("Sender ID").selectOption("MYAPP");
    await app.getByRole("button", { name: "Save sender ID" }).click();
    await app.getByText("Sender ID saved.").waitFor();
    await app.locator("#sender-in-use", { hasText: "MYAPP" }).waitFor();

    await app.getByLabel("Philippine mobile number").fill("0917 123 4567");
    await app.getByRole("button", { name: "Send test SMS" }).click();
    await app.getByText("Test SMS queued.").waitFor();
    const sent = await waitFor(() => e2e.gateway.sent().find((s) => s.message === "Test message from the SMS settings page."), 10_000);
    expect(sent).toMatchObject({ sender_id: "MYAPP", to: "09171234567" });
    await app.getByText(/Test SMS to 0917\*\*\*4567: (delivered|sent)/).waitFor({ timeout: 20_000 });
    await untilRow(app, "0917***4567", /delivered|sent/);
    await untilRow(app, "not a Philippine mobile number");

    await app.getByLabel("Number to opt out").fill("+639179998888");
    await app.getByRole("button", { name: "Add opt-out" }).click();
    await app.locator("#optouts li", { hasText: "0917***8888" }).waitFor();

    await shoot(page, screenshot("app-desktop.png"));
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, screenshot("app-phone.png"));

    await app.getByLabel("Number to take off the list").fill("09179998888");
    await app.getByRole("button", { name: "Remove opt-out" }).click();
    await app.getByText("Nobody has opted out.").waitFor();
    await page.close();
  }, 60_000);

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
    await app.getByText("Sign-in refused: the sign-in could not be verified").waitFor();
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
  for (let tries = 0; tries < 50; tries++) {
    const rows = app.locator("#messages tr", { hasText: text });
    if ((await (status ? rows.filter({ hasText: status }) : rows).count()) > 0) return;
    await app.getByRole("button", { name: "Refresh" }).click();
    await new Promise((r) => setTimeout(r, 200));
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

/** HighLevel's part: an HTTPS page framing /app and answering REQUEST_USER_DATA. */
async function startParent(dir: string, bridgeUrl: string): Promise<Server> {
  const key = join(dir, "parent-key.pem");
  const cert = join(dir, "parent-cert.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
  const server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const payload = payloads[req.url ?? ""];
    if (!payload) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(parentPage(bridgeUrl, payload()));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  parentUrl = `https://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return server;
}

function parentPage(bridgeUrl: string, payload: string): string {
  return `<!doctype html><html><head><title>HighLevel</title><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{margin:0;font-family:sans-serif}header{background:#155eef;color:#fff;padding:.5rem 1rem}iframe{display:block;width:100%;height:1000px;border:0}</style></head>
<body><header>Sub-account · SMS settings</header>
<iframe id="app" title="SMS settings" src="${bridgeUrl}/app"></iframe>
<script>
window.addEventListener("message", function (event) {
  if (event.data && event.data.message === "REQUEST_USER_DATA") {
    event.source.postMessage({ message: "REQUEST_USER_DATA_RESPONSE", payload: ${JSON.stringify(payload)} }, "*");
  }
});
</script></body></html>`;
}
