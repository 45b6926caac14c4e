import { getQuery, getRequestIP, redirect, type H3, type H3Event } from "h3";
import { AppError } from "../errors.ts";
import { createGate } from "./gate.ts";
import { installUrl } from "../core/installs/install.ts";
import type { Core, Installs } from "../core/index.ts";
import type { ResolvedConfig } from "../core/config.ts";
import { addressShares, createClientAddress, proxyPeers } from "./client.ts";
import { companyPage, locationPage, failureAnswer, INSTALL_ADVICE, UNKNOWN_FAILURE, type Advice, type InstallFailure } from "./install-pages.ts";

const DENIED: Advice = {
  happened: "The install was not authorized in HighLevel.",
  todo: "To install bridge, start again from HighLevel's marketplace and allow the access it asks for.",
};
const NO_CODE: Advice = {
  happened: "This address carries no authorization code from HighLevel.",
  todo: "Start the install from HighLevel's marketplace: the page it sends you back to carries the code.",
};
// The code is not spent while it waits for a place, so the same page can be reloaded.
const BUSY: InstallFailure = {
  status: 503,
  text: "too many installs in progress; retry in a moment",
  advice: {
    happened: "Too many installs are in progress at once.",
    todo: "Reload this page in a minute. If it then says the code expired, start the install again from HighLevel.",
  },
};

export type OauthDeps = Pick<Core, "config" | "log"> & { installs: Pick<Installs, "install"> };

/** GET /install and GET /oauth-callback (spec 4.1). Answers are plain text or HTML, as the spec shows; a browser gets its failures as a page saying what to do. */
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
    if (error) return failureAnswer(event, { status: 400, text: `authorization denied: ${error}`, advice: DENIED });
    const code = first(query.code);
    if (!code) return failureAnswer(event, { status: 400, text: "missing authorization code", advice: NO_CODE });
    const leave = await installs.enter(sharesOf(event));
    if (!leave) return failureAnswer(event, { ...BUSY, headers: { "retry-after": "5" } });
    try {
      const result = await core.installs.install(code);
      return result.kind === "location" ? locationPage(result) : companyPage(result);
    } catch (err) {
      if (!(err instanceof AppError) || !err.status) throw err;
      core.log.warn(`install failed: ${err.message}`);
      return failureAnswer(event, { status: err.status, text: err.message, advice: INSTALL_ADVICE[err.code] ?? UNKNOWN_FAILURE });
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
