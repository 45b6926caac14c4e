import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { createMetrics } from "../../src/core/operator/metrics.ts";

// docs/http.md's "Metrics" table is the reference for what GET /metrics serves.
test("docs/http.md's metrics table names every metric bridge serves, and no other", async () => {
  const metrics = createMetrics({
    jobs: { counts: async () => ({}), oldestQueuedAt: async () => undefined },
    replies: { counts: async () => ({}) },
    heldKeys: () => 0,
    optOuts: { counts: async () => ({ reply: 0, operator: 0, page: 0 }) },
    now: () => 0,
  });
  const served = [...(await metrics.render()).matchAll(/^# HELP (bridge_\w+)/gm)].map((m) => m[1]);
  const doc = readFileSync(new URL("../../docs/http.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## Metrics"), doc.indexOf("```yaml", doc.indexOf("## Metrics")));
  const documented = [...section.matchAll(/^\| `(bridge_\w+)/gm)].map((m) => m[1]);
  expect(documented.sort()).toEqual(served.sort());
});
