import type { H3 } from "h3";
import type { AppDeps } from "./app.ts";

/** GET /healthz (the process answers) and GET /readyz (it can do its work). */
export function healthRoutes(app: H3, { core, worker }: AppDeps): void {
  app.get("/healthz", () => ({ status: "ok" }));

  app.get("/readyz", () => {
    const down: string[] = [];
    try {
      core.db.prepare("SELECT 1").get();
    } catch {
      down.push("database");
    }
    if (!worker?.running) down.push("worker");
    const body = { status: down.length ? "unavailable" : "ready", down, queue: safeCounts() };
    return new Response(JSON.stringify(body), {
      status: down.length ? 503 : 200,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  });

  function safeCounts() {
    try {
      return core.jobs.counts();
    } catch {
      return {};
    }
  }
}
