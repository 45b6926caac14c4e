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

  it("carries no inline script, which the policy would refuse", async () => {
    const bridge = await start();
    const html = await (await bridge.fetch("/app")).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });
});
