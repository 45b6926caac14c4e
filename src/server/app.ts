import { H3, HTTPError, onRequest, type H3Event } from "h3";
import { AppError } from "../errors.ts";
import type { Core } from "../core/index.ts";
import type { Worker } from "../core/delivery/worker.ts";
import { adminRoutes } from "./admin.ts";
import { installedHere } from "../core/app/sign-in.ts";
import { createSessions } from "../core/app/sessions.ts";
import { createPageGuard, sessionRoutes } from "./app-session.ts";
import { createPageCalls } from "../core/app/page-calls.ts";
import { pageApiRoutes } from "./app-routes.ts";
import { pageRoutes } from "./app-page.ts";
import { androidRoutes } from "./android.ts";
import type { InboundSink } from "../core/inbound/reply.ts";
import type { BodyBudget } from "./body.ts";
import { createProxyWarning } from "./client.ts";
import { healthRoutes } from "./health.ts";
import { inboundRoutes } from "./inbound.ts";
import { metricsRoutes } from "./metrics.ts";
import { oauthRoutes } from "./oauth.ts";
import { webhookRoutes } from "./webhooks.ts";

export interface AppDeps {
  core: Core;
  /** The queue worker, whose readiness GET /health reports. */
  worker?: Worker;
  /** What unsigned webhook bodies may hold in memory together (a fresh budget when not given). */
  bodyBudget?: BodyBudget;
  /** Called with every error no route handled (tests fail on any). */
  onUnhandled?: (error: unknown) => void;
  /** Where replies received by phones go (tests); default: the inbound room's sink, which refuses while CRM_PROVIDER_ID is unset. */
  inbound?: InboundSink;
}

/** The h3 app of `bridge serve`; every error becomes `{"error": "..."}` here and nowhere else. */
export function createApp(deps: AppDeps): H3 {
  const app = new H3({ silent: true, onError: (error, event) => errorResponse(error, event, deps) });
  const { core } = deps;
  app.use(onRequest(createProxyWarning(core.config, core.log)));
  oauthRoutes(app, { config: core.config, log: core.log, installs: core.installs });
  webhookRoutes(app, { intake: core.delivery.intake, bodyBudget: deps.bodyBudget });
  androidRoutes(app, { receive: core.inbound.phoneWebhook(deps.inbound), bodyBudget: deps.bodyBudget });
  adminRoutes(app, { core });
  inboundRoutes(app, { core });
  const sessions = createSessions(core.appSessions, core.now, async (locationId) => (await installedHere(core.tokens, locationId))?.uninstalledAt === 0);
  sessionRoutes(app, { core, sessions, bodyBudget: deps.bodyBudget });
  const calls = createPageCalls({ tryLowest: core.delivery.scheduler.tryLowest, now: core.now });
  pageApiRoutes(app, { core, guard: createPageGuard(sessions, core.now), calls, notify: core.delivery.doorbell.ring });
  pageRoutes(app);
  healthRoutes(app, { jobs: core.jobs, worker: deps.worker });
  metricsRoutes(app, { metrics: core.operator.metrics, metricsToken: core.config.metricsToken });
  return app;
}

/** Maps any error to its HTTP answer: our AppErrors keep their status, the unknown are 500. */
function errorResponse(error: HTTPError, event: H3Event, deps: AppDeps): Response {
  const app = error.cause instanceof AppError ? error.cause : undefined;
  let status = app?.status ?? error.status;
  let message = app?.status ? app.message : error.message;
  if (error.unhandled && !app?.status) {
    deps.core.log.error(`unhandled error on ${event.req.method} ${event.url.pathname}:`, error.cause ?? error);
    deps.onUnhandled?.(error.cause ?? error);
    status = 500;
    message = "internal error";
  } else if (status === 404 && !app) {
    message = "not found";
  }
  const headers = new Headers(error.headers);
  headers.set("content-type", "application/json; charset=utf-8");
  if (app?.status && app.retryAfterMs !== undefined) headers.set("retry-after", String(Math.ceil(app.retryAfterMs / 1000)));
  return new Response(JSON.stringify({ error: message }), { status, headers });
}
