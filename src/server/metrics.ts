import type { H3 } from "h3";
import type { Operator } from "../core/index.ts";
import { httpError } from "./http-error.ts";
import { bearerCheck } from "./auth.ts";

/**
 * GET /metrics, Prometheus' text format (docs/http.md, "Metrics"), behind the METRICS_TOKEN
 * bearer. Without a token there is no such page: 404, as for any unknown path, so an
 * install that never asked for metrics shows nothing of them.
 */
export function metricsRoutes(app: H3, { metrics, metricsToken: token }: Pick<Operator, "metrics"> & { metricsToken: string }): void {
  const authorized = bearerCheck(token ? [token] : []);

  app.get("/metrics", async (event) => {
    if (!token) throw httpError(404, "not found");
    if (!authorized(event.req.headers.get("authorization"))) {
      throw httpError(401, "unauthorized", { "www-authenticate": "Bearer" });
    }
    const text = await metrics.render();
    return new Response(text, { headers: { "content-type": metrics.contentType } });
  });
}
