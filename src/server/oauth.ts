import { getQuery, getRequestIP, redirect, type H3, type H3Event } from "h3";
import { AppError } from "../errors.ts";
import { createGate } from "./gate.ts";
import { installUrl, type InstallResult } from "../core/installs/install.ts";
import type { Core } from "../core/index.ts";
import type { ResolvedConfig } from "../core/config.ts";
import { addressShares, createClientAddress, proxyPeers } from "./client.ts";

export type OauthDeps = Pick<Core, "config" | "log" | "install">;

/** GET /install and GET /oauth-callback (spec 4.1). Answers are plain text or HTML, as the spec shows. */
export function oauthRoutes(app: H3, core: OauthDeps): void {
  const { config } = core;
  // Anyone may call the callback, and each call sends the client secret to HighLevel
  // with whatever code it brings: a flood of made-up codes made as many token calls
  // at once. Real installs come one person at a time: a few run at once, a few more
  // wait up to 10 s, the rest are told to retry (their code is not spent, so a reload
  // works). An install keeps its place to the end, a company's bulk install too:
  // those are rare, and fewer at once share HighLevel's rate limit better.
  // Each client (an address; an IPv6 /64) has a share of one running and two waiting,
  // so one client's flood of made-up codes cannot keep another's real install out; it
  // still makes one token call at a time, each carrying the client secret: only
  // HighLevel can tell a made-up code from a real one. An IPv6 /48 (one site's
  // network, 65536 /64s) has two running and four waiting in all.
  const installs = createGate({
    concurrent: 4,
    queue: 16,
    maxWaitMs: 10_000,
    shares: [
      { concurrent: 1, queue: 2 },
      { concurrent: 2, queue: 4 },
    ],
  });
  const sharesOf = createInstallShares(config);

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
    const leave = await installs.enter(sharesOf(event));
    if (!leave) return text(503, "too many installs in progress; retry in a moment", { "retry-after": "5" });
    try {
      const result = await core.install(code);
      return result.kind === "location"
        ? page("bridge is installed", "The SMS provider is connected to this location. You can close this tab.")
        : companyPage(result);
    } catch (err) {
      if (!(err instanceof AppError) || !err.status) throw err;
      core.log.warn(`install failed: ${err.message}`);
      return text(err.status, err.message);
    } finally {
      leave();
    }
  });
}

/**
 * The keys of a request's shares of the install gate. A request from a proxy peer
 * while TRUST_PROXY is off has none, only the whole gate's limits: its address stands
 * for every client behind the proxy, and one client's share for all of them would let
 * three made-up codes keep every real install out (the whole gate takes twenty).
 * Telling them apart needs TRUST_PROXY=1; serve warns at the first such request.
 */
function createInstallShares(config: Pick<ResolvedConfig, "trustProxy" | "trustedProxies">): (event: H3Event) => string[] {
  const clientOf = createClientAddress(config);
  const isProxy = proxyPeers(config);
  return (event) => (!config.trustProxy && isProxy(getRequestIP(event)) ? [] : addressShares(clientOf(event)));
}

/** A query value may come repeated; the first one counts. */
function first(value: unknown): string {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === "string" ? v : "";
}

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8", ...headers } });
}

/**
 * What an agency sees after its install: how many locations were connected, and each
 * that was not, with why (HighLevel's words, escaped), so nobody has to read the log.
 */
function companyPage(result: Extract<InstallResult, { kind: "company" }>): Response {
  const { saved, total, failed } = result;
  const summary = `The SMS provider is connected to ${saved} location(s) of ${total}.`;
  if (failed.length === 0) return page("bridge is installed", `${summary} You can close this tab.`);
  const items = failed.map((f) => `<li><code>${escape(f.locationId)}</code>: ${escape(f.reason)}</li>`).join("\n");
  const more = `<p>${escape(`${failed.length} location(s) could not be connected:`)}</p>
<ul>
${items}
</ul>
<p>bridge tries them again at its next reconciliation (hourly, or now with <code>bridge locations sync</code>); installing again from the agency retries them too.</p>`;
  return page("bridge is installed", summary, more);
}

/** `extra` is HTML already escaped by the caller. */
function page(title: string, message: string, extra = ""): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body><h1>${escape(title)}</h1><p>${escape(message)}</p>${extra}</body></html>
`;
  return new Response(html, { status: 200, headers: { "content-type": "text/html; charset=utf-8" } });
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

