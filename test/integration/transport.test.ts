import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, test } from "vitest";
import { NetworkError } from "../../src/core/clients/network.ts";
import { nodeFetch } from "../../src/core/clients/transport.ts";
import { CONNECT_TIMEOUT_CODE, neverSent, timedOut } from "../../src/core/retry.ts";
import { closedPort, jsonResponse, startFake, type Fake } from "../helpers/http.ts";

// The clients' transport, against real servers on 127.0.0.1. The clients' own tests
// (delivery, install, tokens) go through it too; these pin what ofetch and retry.ts
// rely on: fetch's shapes for answers, aborts and failed connections.

let fake: Fake | undefined;
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  await fake?.close();
  fake = undefined;
  for (const close of closers.splice(0)) await close();
});

async function echo() {
  fake = await startFake({
    "POST /echo": (req, event) =>
      jsonResponse({ ...req, port: event.runtime?.node?.req.socket.remotePort }, 201, { "x-answer": "yes" }),
    "GET /empty": () => new Response(null, { status: 204 }),
    "GET /moved": () => new Response(null, { status: 302, headers: { location: "/echo" } }),
    "GET /slow": async () => {
      await sleep(1000); // a server that takes its time to answer
      return "late";
    },
  });
  return fake;
}

describe("nodeFetch", () => {
  test("sends the method, headers and body; answers with status, headers and text", async () => {
    const { url } = await echo();
    const body = JSON.stringify({ to: "09171234567", message: "Salamat po ✓" });
    const res = await nodeFetch(`${url}/echo`, {
      method: "POST",
      headers: new Headers({ "content-type": "application/json", "x-api-key": "k-1" }),
      body,
    });

    expect(res.status).toBe(201);
    expect(res.headers.get("x-answer")).toBe("yes");
    const seen = (await res.json()) as { method: string; headers: Record<string, string>; body: string };
    expect(seen.method).toBe("POST");
    // content-length counts bytes: "✓" is three of them.
    expect(seen.headers).toMatchObject({ "x-api-key": "k-1", "content-type": "application/json", "content-length": String(body.length + 2) });
    expect(seen.body).toBe(body);
    expect(seen.headers["user-agent"]).toMatch(/^bridge\/\d+\.\d+/);
  });

  test("a form body is sent as the form's text", async () => {
    const { url, requests } = await echo();
    await nodeFetch(`${url}/echo`, { method: "POST", body: new URLSearchParams({ code: "a b", grant_type: "x" }) });
    expect(requests[0]?.body).toBe("code=a+b&grant_type=x");
  });

  test("one connection serves consecutive requests (keep-alive)", async () => {
    const { url } = await echo();
    const ports = [];
    for (let i = 0; i < 3; i++) {
      const res = await nodeFetch(`${url}/echo`, { method: "POST", body: "{}" });
      ports.push(((await res.json()) as { port: number }).port);
    }
    expect(new Set(ports).size).toBe(1);
  });

  test("204 answers with an empty body; a redirect is answered, not followed", async () => {
    const { url, received } = await echo();
    const empty = await nodeFetch(`${url}/empty`);
    expect([empty.status, await empty.text()]).toEqual([204, ""]);

    const moved = await nodeFetch(`${url}/moved`);
    expect(moved.status).toBe(302);
    expect(received("POST /echo")).toHaveLength(0);
  });

  test("an abort rejects with the signal's reason: a timeout stays recognisable as one", async () => {
    const { url } = await echo();
    const error = await nodeFetch(`${url}/slow`, { signal: AbortSignal.timeout(50) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect(timedOut(error)).toBe(true);
    expect(neverSent(error)).toBe(false);
  });

  test("a refused connection is a TypeError whose cause proves nothing was sent", async () => {
    const port = await closedPort();
    const error = await nodeFetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ cause: { code: "ECONNREFUSED" } });
    expect(neverSent(error)).toBe(true);
    expect(error).toMatchObject({ kind: "refused", message: `connection refused by 127.0.0.1:${port} (ECONNREFUSED)` });
  });

  test("a connection dropped after the request went out is not 'never sent'", async () => {
    const port = await droppingServer();
    const error = await nodeFetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(neverSent(error)).toBe(false);
    expect(error).toMatchObject({ kind: "reset", message: `connection reset by 127.0.0.1:${port} (ECONNRESET)` });
  });

  test("a connection dropped in the middle of the answer rejects instead of hanging", async () => {
    const port = await tcpServer((socket) =>
      socket.once("data", () => {
        socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial");
        setTimeout(() => socket.destroy(), 20);
      }),
    );
    const error = await nodeFetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(neverSent(error)).toBe(false);
  });

  test("a connection not made in time is given up, and counts as never sent", async () => {
    const port = await unansweredPort();
    const error = await nodeFetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }, 300).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ cause: { code: CONNECT_TIMEOUT_CODE, message: expect.stringMatching(/within 0.3 s/) } });
    expect(neverSent(error)).toBe(true);
    expect(error).toMatchObject({ kind: "timeout", message: `could not connect to 127.0.0.1:${port} within 0.3 s (timeout)` });
  });

  test("a name that does not resolve is a DNS failure, named with its host", async () => {
    const error = await nodeFetch("https://no-such-host.invalid/").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ kind: "dns", message: expect.stringMatching(/^DNS lookup of no-such-host\.invalid failed \((ENOTFOUND|EAI_AGAIN)\)$/) });
    expect(neverSent(error)).toBe(true);
  });

  test("https to a server that does not speak TLS is a TLS failure", async () => {
    const { url } = await echo();
    const error = await nodeFetch(`${url.replace("http:", "https:")}/echo`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "tls", message: expect.stringMatching(/^TLS handshake with 127\.0\.0\.1:\d+ failed: .+ \((EPROTO|ERR_SSL_\w+)\)$/) });
  });

  test("a scheme other than http(s) is refused before anything is sent", async () => {
    await expect(nodeFetch("ftp://127.0.0.1/")).rejects.toThrow(/unsupported URL scheme: ftp:/);
  });
});

/** A server that reads the request, then closes the connection without an answer. */
function droppingServer(): Promise<number> {
  return tcpServer((socket) => socket.once("data", () => socket.destroy()));
}

/** A raw TCP server on 127.0.0.1, closed after the test; resolves to its port. */
async function tcpServer(onConnection: (socket: Socket) => void): Promise<number> {
  const server = createTcpServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/**
 * A port whose listener never accepts: a child process listens with a backlog of one
 * and blocks its event loop, and two connections fill the queue. The kernel then drops
 * further SYNs, so a new connection stays "connecting", as behind a silent firewall.
 */
async function unansweredPort(): Promise<number> {
  const child = spawn(process.execPath, ["-e", UNANSWERED_LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
  closers.push(async () => {
    child.kill("SIGKILL");
    await once(child, "exit");
  });
  const [line] = (await once(child.stdout, "data")) as [Buffer];
  const port = Number(line.toString().trim());
  for (let i = 0; i < 2; i++) {
    const filler = connect(port, "127.0.0.1");
    filler.on("error", () => {}); // closed with the child
    await once(filler, "connect");
    closers.push(async () => void filler.destroy());
  }
  return port;
}

const UNANSWERED_LISTENER = `
  const server = require("node:net").createServer();
  server.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
    process.stdout.write(server.address().port + "\\n", () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
  });`;
