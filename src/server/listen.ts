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

/**
 * Node's HTTP server around the h3 app, with timeouts that cut off slow clients
 * (a slowloris holding headers open, a body trickling in).
 */
export function listen(app: H3, host: string, port: number): Promise<Listening> {
  const server = createServer(toNodeHandler(app));
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
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
