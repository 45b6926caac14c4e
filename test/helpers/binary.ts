import { execFile, spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CLIENT_ID, signBody, waitFor } from "./bridge.ts";
import { startFakeCrm } from "./fake-crm.ts";
import { startFakeGateway } from "./fake-gateway.ts";

export const BINARY = resolve("dist/bridge");

export function assertBuilt(): void {
  if (!existsSync(BINARY)) throw new Error("dist/bridge is missing: run `npm run build` first (npm test does)");
}

/** Runs `dist/bridge …` with nothing but `env` (no Node on PATH), as an operator would. */
export function runBridge(env: Record<string, string>, cwd: string, args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(BINARY, args, { env, cwd }, (error, stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
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

/**
 * A temp directory, a fake CRM and a fake gateway, a webhook signing key, and the
 * environment that points `dist/bridge` at them: what every end-to-end test starts from.
 */
export async function e2eSetup(name: string, extraEnv: Record<string, string> = {}) {
  assertBuilt();
  const dir = mkdtempSync(join(tmpdir(), `bridge-${name}-`));
  const crm = await startFakeCrm();
  const gateway = await startFakeGateway();
  const keys = generateKeyPairSync("ed25519");
  const env: Record<string, string> = {
    BASE_URL: "http://bridge.test",
    CRM_CLIENT_ID: CLIENT_ID,
    CRM_CLIENT_SECRET: `${name}-client-secret`,
    CRM_API_URL: crm.url,
    CRM_WEBHOOK_PUBLIC_KEY: keys.publicKey.export({ type: "spki", format: "pem" }).toString(),
    SMS_API_URL: gateway.url,
    SMS_API_KEY: `${name}-global-sms-key`,
    DATABASE_PATH: join(dir, "bridge.db"),
    HOME: dir,
    ...extraEnv,
  };
  return {
    dir,
    crm,
    gateway,
    env,
    /** POSTs a signed webhook to a running `serve`; network errors propagate. */
    webhook(url: string, body: unknown) {
      const raw = JSON.stringify(body);
      return fetch(`${url}/webhooks/crm`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-ghl-signature": signBody(raw, keys.privateKey) },
        body: raw,
      });
    },
    async close() {
      await crm.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type E2E = Awaited<ReturnType<typeof e2eSetup>>;
