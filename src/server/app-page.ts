import type { H3 } from "h3";
import { PAGE_CSS, PAGE_HTML } from "./app-page-html.ts";
import { PAGE_SCRIPT } from "./app-page-script.ts";

/**
 * Framing is allowed from any HTTPS origin: white-label agencies show HighLevel on their
 * own domains, so no origin list could be complete. The page holds no authority of its own
 * (that comes from HighLevel's encrypted payload), and everything it loads is its own.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors https:",
].join("; ");

/** `GET /app`: the settings page HighLevel frames (its Custom Page URL), with its script and style. */
export function pageRoutes(app: H3): void {
  app.get("/app", () => asset(PAGE_HTML, "text/html; charset=utf-8"));
  app.get("/app/page.js", () => asset(PAGE_SCRIPT, "text/javascript; charset=utf-8"));
  app.get("/app/page.css", () => asset(PAGE_CSS, "text/css; charset=utf-8"));
}

function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: {
      "content-type": type,
      "content-security-policy": PAGE_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      // A new executable may carry a new page: the browser asks each time.
      "cache-control": "no-cache",
    },
  });
}
