// The intake baseline: the same HTTP stack as bridge (node:http + h3 2 + h3/node)
// with nothing behind it: read the body, answer 200. Whatever bridge is slower
// than this is bridge's own work (signature check, validation, SQLite commit, drain).
import { createServer } from "node:http";
import { H3 } from "h3";
import { toNodeHandler } from "h3/node";

const app = new H3();
app.post("/webhooks/crm", async (event) => {
  await event.req.arrayBuffer();
  return { status: "accepted" };
});

// The inbound phase's baseline: the same, on the path replies come to.
app.post("/api/inbound", async (event) => {
  await event.req.arrayBuffer();
  return { id: "in-bare", duplicate: false };
});

const server = createServer(toNodeHandler(app));
server.listen(0, "127.0.0.1", () => {
  // Same line bridge prints, so the benchmark starts both the same way.
  console.error(`bare h3 listening on http://127.0.0.1:${server.address().port}`);
});
// Never outlive the benchmark: it SIGKILLs us when it exits, but if it is itself
// SIGKILLed we are re-parented, and that is our cue to go.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && process.exit(0), 1000).unref();
