import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { startBridge, waitFor, type Bridge } from "../helpers/bridge.ts";
import { jsonResponse } from "../helpers/http.ts";

/** Limits before authentication (CONTRACT.md 12), through real sockets against the real app. */

/** A raw connection that writes `data` and then holds; it records what comes back and when it closes. */
function hold(url: string, data: string | Buffer = "") {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  const conn = { socket, answer: "", closedAt: 0, closed: new Promise<void>((resolve) => socket.once("close", () => resolve())) };
  socket.once("close", () => (conn.closedAt = Date.now()));
  socket.on("data", (chunk: Buffer) => (conn.answer += chunk.toString("latin1")));
  socket.on("error", () => {}); // a reset after the server's answer is one way of closing
  if (data.length) socket.write(data);
  return conn;
}

describe("a connection that sends nothing", () => {
  let bridge: Bridge | undefined;
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
  });

  test("is closed by the server within 10 s (serve's default)", async () => {
    bridge = await startBridge({ worker: false });
    const opened = Date.now();
    const silent = hold(bridge.url);
    await silent.closed;
    expect(silent.answer).toBe("");
    expect(silent.closedAt - opened).toBeLessThan(10_000);
  }, 15_000);

  test("is closed, while a request whose handler outlasts that silence is still answered", async () => {
    bridge = await startBridge({ worker: false, timeouts: { idleMs: 200 } });
    const { crm } = bridge;
    crm.grantLocation("code-slow", "loc-slow");
    const answer = crm.codes.get("code-slow");
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    crm.on("POST /oauth/token", async () => {
      await released;
      return jsonResponse(answer);
    });

    const install = bridge.fetch("/oauth-callback?code=code-slow");
    await waitFor(() => crm.received("POST /oauth/token").length === 1);
    // The install now waits on the CRM: nothing moves on its connection either way.
    // A silent connection opened now is closed once the idle time is over; only then
    // does the CRM answer.
    await hold(bridge.url).closed;
    release();
    const res = await install;
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("bridge is installed");
    expect(bridge.core.tokens.get("loc-slow")).toBeDefined();
  });
});
