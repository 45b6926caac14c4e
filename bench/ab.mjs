// Before and after: `node bench/ab.mjs OTHER_BINARY [THIS_BINARY]` (THIS_BINARY defaults to
// dist/bridge). Compares two builds of bridge on this machine, taking turns A B A B so
// that a slow patch of the shared machine lands on both:
//   - intake: signed webhooks/s into `serve` of each, alternating rounds of load;
//   - CLI start-up: `locations list --json` of each on the same 1,000-location database.
// Prints each round and the median ratios THIS/OTHER (intake req/s: > 1 is faster; start-up
// wall time: < 1 is faster). A change that only moves code shows ratios within the rounds' spread.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startFakeCrm, startFakeGateway } from "./lib/fakes.mjs";
import { killAll, startListening, stop } from "./lib/procs.mjs";
import { median, round } from "./lib/stats.mjs";
import { bridgeEnv } from "./lib/env.mjs";
import { LOCATION_ID, signedWebhookRequest } from "./lib/webhooks.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ROUNDS = Number(process.env.AB_ROUNDS ?? 6);
const LOAD = { connections: 50, durationSec: 5, warmupSec: 2, presigned: 60_000 };
const CLI_RUNS = Number(process.env.AB_CLI_RUNS ?? 20);

const [other, self = join(ROOT, "dist/bridge")] = process.argv.slice(2);
if (!other) {
  console.error("usage: node bench/ab.mjs OTHER_BINARY [THIS_BINARY]   (build both first)");
  process.exit(2);
}
const autocannon = (await import("autocannon")).default;
const WORK = mkdtempSync(join(os.tmpdir(), "bridge-ab-"));
const CACHE = join(os.homedir(), ".cache", "bridge-bench");
mkdirSync(CACHE, { recursive: true, mode: 0o700 });
process.on("exit", () => {
  killAll();
  rmSync(WORK, { recursive: true, force: true });
});

/** A private copy of each binary: a rebuild during the run must not swap one under it. */
function copyOf(binary, name) {
  const copy = join(WORK, name);
  copyFileSync(resolve(binary), copy);
  chmodSync(copy, 0o755);
  return copy;
}
const builds = { other: copyOf(other, "other"), self: copyOf(self, "self") };

function envFor(databasePath, crmUrl, smsUrl) {
  return bridgeEnv({ cache: CACHE, databasePath, crmUrl, smsUrl });
}

/** `serve` of one build with its own fakes and database, one location installed. */
async function serve(name) {
  const crm = await startFakeCrm();
  const gateway = await startFakeGateway();
  const dir = mkdtempSync(join(WORK, `${name}-`));
  const server = await startListening(builds[name], ["serve"], {
    env: envFor(join(dir, "bridge.db"), crm.url, gateway.url),
    cwd: dir,
    logFile: join(dir, "bridge.log"),
  });
  const res = await fetch(`${server.url}/oauth-callback?code=code-${LOCATION_ID}`);
  if (res.status !== 200) throw new Error(`${name}: install answered ${res.status}`);
  return { ...server, close: async () => (await stop(server.child), await crm.close(), await gateway.close()) };
}

async function load(url, prefix) {
  const options = { url, connections: LOAD.connections, pipelining: 1, timeout: 10 };
  await autocannon({ ...options, duration: LOAD.warmupSec, requests: [signedWebhookRequest(`${prefix}-warm`)] });
  const r = await autocannon({ ...options, duration: LOAD.durationSec, requests: [signedWebhookRequest(prefix, LOAD.presigned)] });
  return { reqPerSec: round(r.requests.average), p99: r.latency.p99, non2xx: r.non2xx };
}

async function intake() {
  const servers = { other: await serve("other"), self: await serve("self") };
  const runs = { other: [], self: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const name of i % 2 === 0 ? ["other", "self"] : ["self", "other"]) {
      const r = await load(servers[name].url, `${name}-r${i}`);
      runs[name].push(r);
      console.log(`intake round ${i + 1} ${name}: ${r.reqPerSec} req/s, p99 ${r.p99} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ""}`);
    }
  }
  for (const s of Object.values(servers)) await s.close();
  const ratios = runs.self.map((r, i) => r.reqPerSec / runs.other[i].reqPerSec);
  return { ratio: round(median(ratios), 3), min: round(Math.min(...ratios), 3), max: round(Math.max(...ratios), 3), runs };
}

/** A database of 1,000 locations, made and migrated by `serve` of build `name`. */
async function cliDatabase(name) {
  const dir = mkdtempSync(join(WORK, `cli-${name}-`));
  const db = join(dir, "bridge.db");
  const server = await startListening(builds[name], ["serve"], { env: envFor(db, "http://127.0.0.1:9", "http://127.0.0.1:9"), cwd: dir, logFile: join(dir, "serve.log") });
  await stop(server.child);
  const sqlite = new (createRequire(import.meta.url)("better-sqlite3"))(db);
  const insert = sqlite.prepare(`INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at,
    installed_at, updated_at, sender_id, sms_api_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const now = Date.now();
  sqlite.transaction(() => {
    for (let i = 0; i < 1000; i++) insert.run(`loc-${i}`, "company-bench", `at-${i}`, `rt-${i}`, now + 86_400_000, now, now, `S${i % 10}`, "");
  })();
  sqlite.close();
  return { dir, db };
}

/** Each build lists its own database (the newer schema may differ), in turns. */
function cliStartup(files) {
  const time = (name) => {
    const started = performance.now();
    const r = spawnSync(builds[name], ["--db", files[name].db, "locations", "list", "--json"], { cwd: files[name].dir, env: { XDG_CACHE_HOME: CACHE }, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${name}: locations list exited ${r.status}: ${r.stderr}`);
    return performance.now() - started;
  };
  time("other");
  time("self");
  const ratios = [];
  for (let i = 0; i < CLI_RUNS; i++) {
    const order = i % 2 === 0 ? ["other", "self"] : ["self", "other"];
    const ms = Object.fromEntries(order.map((name) => [name, time(name)]));
    ratios.push(ms.self / ms.other);
  }
  return { ratio: round(median(ratios), 3), min: round(Math.min(...ratios), 3), max: round(Math.max(...ratios), 3) };
}

const cli = cliStartup({ other: await cliDatabase("other"), self: await cliDatabase("self") });
console.log(`CLI start-up (locations list --json, 1,000 locations), wall time this/other: median ${cli.ratio} (${cli.min}–${cli.max}, ${CLI_RUNS} pairs)`);
const result = await intake();
console.log(`intake req/s this/other: median ${result.ratio} (${result.min}–${result.max}, ${ROUNDS} pairs)`);
process.exit(0);
