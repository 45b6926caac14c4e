import { connect, createServer, type AddressInfo } from "node:net";
import { getRequestIP, H3, type H3Event } from "h3";
import { listen, type Listening } from "../../src/server/listen.ts";

/** One request as a fake server received it. */
export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: string;
  /** The address the request came from, as the server's socket saw it. */
  remoteAddress: string;
}

export type Handler = (req: Recorded, event: H3Event) => Response | Promise<Response> | unknown;

/**
 * A tiny real HTTP server on 127.0.0.1:0 that records every request and answers
 * through a replaceable handler per "METHOD /path" route: the fake CRM and the fake
 * gateway are both built on it. Tests assert on `requests`, never on mocks. A route
 * "ALL /**" answers whatever no other route takes.
 */
export async function startFake(routes: Record<string, Handler>) {
  const requests: Recorded[] = [];
  const handlers = { ...routes };
  const app = new H3();
  for (const route of Object.keys(routes)) {
    const [method, path] = route.split(" ") as [string, string];
    // "ALL /**": every method on every path no other route takes.
    app.on(method === "ALL" ? "" : (method as "GET"), path, async (event) => {
      const url = event.url;
      const req: Recorded = {
        method: event.req.method,
        path: url.pathname,
        query: url.searchParams,
        headers: Object.fromEntries(event.req.headers.entries()),
        body: await event.req.text(),
        remoteAddress: getRequestIP(event) ?? "",
      };
      requests.push(req);
      return handlers[route]!(req, event);
    });
  }
  const server: Listening = await listen(app, "127.0.0.1", 0);
  return {
    url: server.url,
    requests,
    /** Replace how a route answers, e.g. to make it fail. */
    on(route: string, handler: Handler) {
      if (!(route in handlers)) throw new Error(`fake has no route ${route}`);
      handlers[route] = handler;
    },
    /** The recorded requests whose "METHOD path" starts with `prefix`. */
    received(prefix: string): Recorded[] {
      return requests.filter((r) => `${r.method} ${r.path}`.startsWith(prefix));
    },
    async close() {
      server.server.closeAllConnections();
      await server.close();
    },
  };
}

export type Fake = Awaited<ReturnType<typeof startFake>>;

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

/** A port nothing listens on: connections to it are refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Opens a raw connection to `url`'s host and port and writes `head` as it is; resolves
 * with everything the server wrote back once it closed the connection, or with what
 * came so far plus "(open)" when it is still open after `ms`.
 */
export async function rawExchange(url: string, head: string, ms = 2000): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = "";
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
  socket.on("error", () => {}); // a reset after the answer is one way of closing
  socket.write(head);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const closed = await Promise.race([
    new Promise<boolean>((resolve) => socket.once("close", () => resolve(true))),
    new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false))),
  ]);
  clearTimeout(timer);
  socket.destroy();
  return closed ? answer : `${answer}(open)`;
}
