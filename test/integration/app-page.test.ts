import { describe, expect, it } from "vitest";
import { bridgePerTest } from "../helpers/bridge.ts";

const start = bridgePerTest();

describe("GET /app", () => {
  it.each([
    ["/app", "text/html", '<script src="/app/page.js"'],
    ["/app/page.js", "text/javascript", 'postMessage({ message: "REQUEST_USER_DATA" }, "*")'],
    ["/app/page.css", "text/css", ""],
  ])("%s: framable from any HTTPS origin, nothing loaded from elsewhere", async (path, type, holds) => {
    const bridge = await start();
    const res = await bridge.fetch(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain(type);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors https:");
    expect(csp).toContain("script-src 'self'");
    expect(res.headers.get("x-frame-options")).toBeNull();
    const text = await res.text();
    expect(text).toContain(holds);
  });

  it("takes HighLevel's sign-in answer from its parent frame only, never from another window", async () => {
    const bridge = await start();
    const script = await (await bridge.fetch("/app/page.js")).text();
    expect(script).toContain("if (event.source !== window.parent || token || signing) return;");
  });

  it("gives every form its own status line, so what a form did is said beside it", async () => {
    const bridge = await start();
    const html = await (await bridge.fetch("/app")).text();
    const forms = html.split("<form").slice(1).map((form) => form.slice(0, form.indexOf("</form>")));
    expect(forms).toHaveLength(5);
    for (const form of forms) expect(form).toContain('<p class="note" role="status"');
  });

  it("carries no inline script, which the policy would refuse", async () => {
    const bridge = await start();
    const html = await (await bridge.fetch("/app")).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });
});
