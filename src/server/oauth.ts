import { getQuery, redirect, type H3 } from "h3";
import { AppError } from "../core/errors.ts";
import { completeInstall, installUrl } from "../core/install.ts";
import type { AppDeps } from "./app.ts";

/** GET /install and GET /oauth-callback (spec 4.1). Answers are plain text or HTML, as the spec shows. */
export function oauthRoutes(app: H3, { core }: AppDeps): void {
  const { config } = core;

  app.get("/install", () => redirect(installUrl(config.crm.marketplaceUrl, config.baseUrl, config.crm.clientId), 302));

  app.get("/oauth-callback", async (event) => {
    // h3 answers HEAD with the GET handler; a link checker's HEAD must not spend the
    // single-use code that the user's own GET is about to bring.
    if (event.req.method === "HEAD") return new Response(null, { status: 405, headers: { allow: "GET" } });
    const query = getQuery(event);
    const error = first(query.error);
    if (error) return text(400, `authorization denied: ${error}`);
    const code = first(query.code);
    if (!code) return text(400, "missing authorization code");
    try {
      const result = await completeInstall(
        {
          crm: core.crm,
          tokens: core.tokens,
          now: core.now,
          log: core.log,
          paceMs: core.bulkPaceMs,
          allowedCompanyIds: config.allowedCompanyIds,
        },
        code,
      );
      return result.kind === "location"
        ? page("bridge is installed", "The SMS provider is connected to this location. You can close this tab.")
        : page("bridge is installed", `The SMS provider is connected to ${result.saved} location(s). You can close this tab.`);
    } catch (err) {
      if (!(err instanceof AppError) || !err.status) throw err;
      core.log.warn(`install failed: ${err.message}`);
      return text(err.status, err.message);
    }
  });
}

/** A query value may come repeated; the first one counts. */
function first(value: unknown): string {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === "string" ? v : "";
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function page(title: string, message: string): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body><h1>${escape(title)}</h1><p>${escape(message)}</p></body></html>
`;
  return new Response(html, { status: 200, headers: { "content-type": "text/html; charset=utf-8" } });
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

