import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import type { H3 } from "h3";

export interface Listening {
  server: Server;
  /** http://host:port as actually bound (port 0 picks a free one). */
  url: string;
  /** Stops accepting, ends idle keep-alive connections, waits for open requests. */
  close(): Promise<void>;
}

export interface Timeouts {
  /** All request headers must arrive within this. */
  headersMs?: number;
  /** The whole request, body included, must arrive within this. */
  requestMs?: number;
}

/**
 * Node's HTTP server around the h3 app, with timeouts that cut off slow clients
 * (a slowloris holding headers open, a body trickling in).
 */
export function listen(app: H3, host: string, port: number, timeouts: Timeouts = {}): Promise<Listening> {
  const headersMs = timeouts.headersMs ?? 10_000;
  const server = createServer(
    {
      headersTimeout: headersMs,
      requestTimeout: timeouts.requestMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // How often Node looks for connections past those timeouts (its default is 30 s).
      connectionsCheckingInterval: Math.min(1000, headersMs),
    },
    toNodeHandler(app),
  );
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
      resolve({
        server,
        url: `http://${shown}:${address.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
          }),
      });
    });
  });
}
