import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A small load balancer for the tests of several servers, doing what docs/operations.md's
 * nginx example does: each request goes to the backends in turn; one that fails to answer
 * (refused, reset, a 502 or 503) is tried on the next, a POST included (intake dedupes on
 * the message id, so a retry is safe); when none answers, 429, the one status HighLevel
 * retries a webhook on. `backends` may change while it runs (a server killed, another
 * started): it is read at each request.
 */
export async function startBalancer(backends: () => string[]) {
  let turn = 0;
  const tally = { requests: 0, retried: 0, refused: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => void forward(req, Buffer.concat(chunks), res));
  });

  async function forward(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    tally.requests++;
    const urls = backends();
    const start = turn++;
    for (let i = 0; i < urls.length; i++) {
      if (i > 0) tally.retried++;
      const answer = await attempt(urls[(start + i) % urls.length]!, req, body).catch(() => undefined);
      if (!answer || answer.status === 502 || answer.status === 503) continue;
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
      return;
    }
    tally.refused++;
    res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
    res.end(JSON.stringify({ error: "no server answered; try again" }));
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tally,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer };

function attempt(base: string, req: IncomingMessage, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: new URL(base).host, "content-length": String(body.length) };
    const out = request(`${base}${req.url ?? "/"}`, { method: req.method, headers, timeout: 30_000 }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
      answer.on("error", reject);
    });
    out.on("timeout", () => out.destroy(new Error("timeout")));
    out.on("error", reject);
    out.end(body);
  });
}
