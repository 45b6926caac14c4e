import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { signBody, startWorld, waitFor } from "./bridge.ts";
import { COMPANY_ID } from "./fake-crm.ts";

export const BINARY = resolve("dist/bridge");

export function assertBuilt(): void {
  if (!existsSync(BINARY)) throw new Error("dist/bridge is missing: run `npm run build` first (npm test does)");
}

/** Runs `dist/bridge …` with nothing but `env` (no Node on PATH), as an operator would. */
export function runBridge(env: Record<string, string>, cwd: string, args: string[]) {
  return new Promise<{ code: number | string; stdout: string; stderr: string }>((done) => {
    execFile(BINARY, args, { env, cwd }, (error, stdout, stderr) => {
      // Killed by a signal there is no exit code: say which signal, so no crash passes for "exit 1".
      done({ code: error ? (typeof error.code === "number" ? error.code : `signal ${error.signal}`) : 0, stdout, stderr });
    });
  });
}

/** `dist/bridge …` with `stdin` written to its standard input (secrets, as `-` reads them). */
export async function runWithStdin(env: Record<string, string>, cwd: string, stdin: string, args: string[]) {
  const child = spawn(BINARY, args, { env, cwd });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  child.stdin?.end(stdin);
  return { code: await exited(child), out, err };
}

/** `dist/bridge serve` in the background; resolves once it listens. */
export async function startServe(env: Record<string, string>, cwd: string) {
  const child: ChildProcess = spawn(BINARY, ["serve"], { env: { HOST: "127.0.0.1", PORT: "0", ...env }, cwd });
  const server = { child, log: "", url: "" };
  child.stdout?.on("data", (chunk: Buffer) => (server.log += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (server.log += chunk.toString()));
  server.url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(server.log)?.[1], 10_000).catch(() => {
    child.kill("SIGKILL");
    throw new Error(`bridge serve did not start:\n${server.log}`);
  });
  return server;
}

export type Serve = Awaited<ReturnType<typeof startServe>>;

/** Resolves with the exit code (or signal name) once the process has ended. */
export function exited(child: ChildProcess): Promise<number | string | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
}

/** startWorld, plus what `dist/bridge` needs in its environment and a way to sign webhooks to it. */
export async function e2eSetup(name: string, extraEnv: Record<string, string> = {}) {
  assertBuilt();
  const world = await startWorld(name);
  const env: Record<string, string> = {
    ...world.env,
    CRM_CLIENT_SECRET: `${name}-client-secret`,
    SMS_API_KEY: `${name}-global-sms-key`,
    ALLOWED_COMPANY_IDS: COMPANY_ID,
    // Report on the gateway's acceptance: the binary's receipt looks start 5 s after a send.
    DLR_WAIT: "0",
    HOME: world.dir,
    // The world's directory is under os.tmpdir(), on Linux /tmp, where bridge refuses to
    // unpack its addon (anyone can write there); the tester's own cache is where theirs goes.
    XDG_CACHE_HOME: join(homedir(), ".cache"),
    ...extraEnv,
  };
  return {
    ...world,
    env,
    /** POSTs a signed webhook to a running `serve`; network errors propagate. */
    webhook(url: string, body: unknown) {
      const raw = JSON.stringify(body);
      return fetch(`${url}/webhooks/crm`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-ghl-signature": signBody(raw, world.keys.privateKey) },
        body: raw,
      });
    },
  };
}

export type E2E = Awaited<ReturnType<typeof e2eSetup>>;
