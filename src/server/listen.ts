import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
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
  /** A new connection that stays silent this long is closed (docs/http.md, "Limits before anyone is authenticated"). */
  idleMs?: number;
  /** All request headers must arrive within this. */
  headersMs?: number;
  /** The whole request, body included, must arrive within this. */
  requestMs?: number;
}

/**
 * Node's HTTP server around the h3 app, with timeouts that cut off slow clients
 * (a slowloris holding headers open, a body trickling in) and silent ones.
 */
export function listen(app: H3, host: string, port: number, timeouts: Timeouts = {}): Promise<Listening> {
  const headersMs = timeouts.headersMs ?? 10_000;
  const handle = toNodeHandler(app);
  const server = createServer(
    {
      headersTimeout: headersMs,
      requestTimeout: timeouts.requestMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // How often Node looks for connections past those timeouts (its default is 30 s).
      connectionsCheckingInterval: Math.min(1000, headersMs),
    },
    (req, res) => {
      if (req.socket.timeout) req.socket.setTimeout(0); // it spoke: see below
      return handle(req, res);
    },
  );
  // Node's headersTimeout starts with a request's first byte: a connection that never
  // sends one was kept forever, and a few hundred of them used up the process's file
  // descriptors. So a new socket gets an inactivity timeout (Node closes it when it
  // fires), which is cleared above once its first request's headers are in: a socket
  // timeout counts silence both ways, and a handler may rightly keep the client waiting
  // longer (a bulk install paces its CRM calls). From then on Node's own timeouts
  // apply: headersTimeout and requestTimeout while a request arrives, keepAliveTimeout
  // between requests. 8 s, so that the close comes within 10 s even on a busy event loop
  // (docs/RELIABILITY.md, "Nobody let in").
  const idleMs = timeouts.idleMs ?? 8_000;
  server.on("connection", (socket: Socket) => socket.setTimeout(idleMs));
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
