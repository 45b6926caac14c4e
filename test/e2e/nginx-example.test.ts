import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, expect, test } from "vitest";

// docs/operations.md's nginx example ("A load balancer that HighLevel can rely on"), run as
// written in front of two small HTTP servers standing in for bridge: its upstream addresses
// and listen address are replaced by the test's, TLS left out. Where nginx is not installed
// the test is skipped, saying so (apt-get install nginx-light).

const nginx = findNginx();

function findNginx(): string | undefined {
  try {
    return execFileSync("sh", ["-c", "command -v nginx || ls /usr/sbin/nginx"], { encoding: "utf8" }).trim().split("\n")[0] || undefined;
  } catch {
    return undefined;
  }
}

/** The section's ```nginx block, as the page has it. */
function docBlock(): string {
  const page = readFileSync("docs/operations.md", "utf8");
  const section = page.slice(page.indexOf("### A load balancer that HighLevel can rely on"));
  const block = /```nginx\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("docs/operations.md has no nginx block in its load balancer section");
  return block;
}

/** The doc's block with the test's addresses: each upstream server in turn, the listen address, no TLS. */
function withAddresses(block: string, upstreams: number[], port: number): string {
  let next = 0;
  return block
    .replace(/^(\s*server\s+)[\w.:[\]-]+:\d+/gm, (_, head: string) => `${head}127.0.0.1:${upstreams[next++]}`)
    .replace(/^\s*listen\s+[^;]+;/m, `    listen 127.0.0.1:${port};`)
    .replace(/^\s*ssl_\w+[^;]*;\n/gm, "");
}

/** nginx.conf around the block: in the foreground, one process, every file in `dir`. */
function nginxConf(dir: string, block: string): string {
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((name) => {
    mkdirSync(join(dir, name));
    return `  ${name}_temp_path ${join(dir, name)};`;
  });
  return [
    "daemon off;",
    "master_process off;",
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "error.log")} warn;`,
    "events { worker_connections 64; }",
    "http {",
    "  access_log off;",
    ...temp,
    block,
    "}",
  ].join("\n");
}

/** A stand-in for bridge: answers every request 200 naming itself, recording the bodies it took. */
async function backend(name: string) {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ server: name }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    bodies,
    /** Down: nothing listens on its port any more. */
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function freePort(): Promise<number> {
  const b = await backend("probe");
  await b.stop();
  return b.port;
}

async function listening(port: number, child: ChildProcess, errorLog: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${readFileSync(errorLog, "utf8")}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (up) return;
    await sleep(50);
  }
  throw new Error("nginx did not listen within 10 s");
}

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const post = (port: number, messageId: string) =>
  fetch(`http://127.0.0.1:${port}/webhooks/crm`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messageId }) });

test("the doc's nginx block holds what HighLevel needs: a failed POST tried on another server, 429 when none answers", () => {
  const block = docBlock();
  expect(block).toMatch(/proxy_next_upstream error timeout http_502 http_503 non_idempotent;/);
  expect(block).toMatch(/proxy_intercept_errors on;/);
  expect(block).toMatch(/error_page 502 503 504 =429 /);
});

if (!nginx) {
  test.skip("nginx example: a POST reaches the live server, 429 when none is (nginx is not installed here: apt-get install nginx-light)", () => {});
} else {
  test("nginx example: a POST reaches the live server when the other is down, and is answered 429 when both are", async () => {
    const [a, b] = [await backend("a"), await backend("b")];
    cleanups.push(() => a.stop().catch(() => {}), () => b.stop().catch(() => {}));
    const dir = mkdtempSync(join(tmpdir(), "bridge-nginx-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    writeFileSync(join(dir, "nginx.conf"), nginxConf(dir, withAddresses(docBlock(), [a.port, b.port], port)));
    const errorLog = join(dir, "error.log");
    const child = spawn(nginx, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", errorLog], { stdio: "ignore" });
    cleanups.push(async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise((resolve) => child.once("exit", resolve));
      }
    });
    await listening(port, child, errorLog);

    expect((await post(port, "both-up")).status).toBe(200);

    await a.stop();
    for (let i = 1; i <= 4; i++) {
      const res = await post(port, `a-down-${i}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ server: "b" });
    }
    expect(b.bodies.filter((body) => body.includes("a-down-"))).toHaveLength(4);
    // Each of those POSTs was answered; the one nginx tried on the stopped server first was retried on b.
    expect(readFileSync(errorLog, "utf8")).toMatch(new RegExp(`Connection refused\\) while connecting to upstream.*127\\.0\\.0\\.1:${a.port}`));

    await b.stop();
    const none = await post(port, "both-down");
    expect(none.status).toBe(429);
    expect(none.headers.get("retry-after")).toBe("60");
  });
}
