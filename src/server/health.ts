import type { H3 } from "h3";
import type { JobStore } from "../store/contract.ts";
import type { Worker } from "../core/delivery/worker.ts";

export interface HealthDeps {
  jobs: Pick<JobStore, "counts">;
  worker?: Pick<Worker, "running">;
}

/** GET /healthz (the process answers) and GET /readyz (it can do its work). */
export function healthRoutes(app: H3, { jobs, worker }: HealthDeps): void {
  app.get("/healthz", () => ({ status: "ok" }));

  app.get("/readyz", async () => {
    const down: string[] = [];
    // Counting the queue is a real read: the database answers, or it is down.
    let queue = {};
    try {
      queue = await jobs.counts();
    } catch {
      down.push("database");
    }
    if (!worker?.running) down.push("worker");
    const body = { status: down.length ? "unavailable" : "ready", down, queue };
    return new Response(JSON.stringify(body), {
      status: down.length ? 503 : 200,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  });
}
