// The servers phase of the bench (bench/run.mjs; `BENCH_ONLY=servers npm run bench` runs it alone):
// several `bridge serve` on one PostgreSQL database, each with its own source address towards a
// fake Cast that enforces Cast's limits (../shared/CAST_API.md, "Limits"): 30 requests/s, burst 50,
// per source address for every call; 10 messages/s per API key. Cast's rate is SMS accepted by the
// fake per second in a steady window, 1 server against 3, in alternating rounds:
//   - ten keys: ten locations, each with its own key, a backlog spread over them. The addresses
//     bind (about 29 a second each), so three servers should send about three times as much;
//   - one key: one location's backlog. The key binds (10 a second) whatever the number of
//     servers: more servers buy availability, not speed.
// No key may ever be refused by the fake's per-key limiter: bridge's budget for each key is shared
// through the database. Each key's most SMS in any 1 s window is reported beside it (a token
// bucket's second can hold its burst on top of its rate).
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { ADMIN_KEY, bridgeEnv } from "./lib/env.mjs";
import { startFakeCrm, startFakeGateway } from "./lib/fakes.mjs";
import { sampleProcess, sleep, startListening, stop } from "./lib/procs.mjs";
import { median, round } from "./lib/stats.mjs";
import { postWebhook } from "./lib/webhooks.mjs";
import { postgresMissing, startPostgres } from "../test/helpers/postgres.ts";

/** Cast's limits as the fake enforces them; the addresses of the servers (127.0.0.2, .3, .4). */
export const SERVERS_CAST = { perSource: { ratePerSec: 30, burst: 50 }, perKey: { ratePerSec: 10, burst: 10 } };

/**
 * `webhooks`: the backlog of each case, enough to keep three servers busy through posting,
 * `settleSec` and the measured `windowSec` (ten keys: ~90 SMS/s for ~20 s).
 */
export function serversSettings(quick) {
  return {
    rounds: quick ? 1 : 3,
    servers: [1, 3],
    settleSec: quick ? 2 : 3,
    windowSec: quick ? 4 : 10,
    posters: 20,
    cases: {
      tenKeys: { keys: 10, webhooks: quick ? 800 : 2000 },
      oneKey: { keys: 1, webhooks: quick ? 120 : 250 },
    },
    ...SERVERS_CAST,
  };
}

/**
 * Runs every case's rounds; `ctx`: { binary, cache, work, quick, log }. Returns the figures,
 * or { skipped } where PostgreSQL cannot start here.
 */
export async function serversPhase(ctx) {
  const S = serversSettings(ctx.quick);
  const missing = postgresMissing();
  if (missing) return { skipped: missing };
  const postgres = await startPostgres();
  const admin = new pg.Client({ connectionString: postgres.url.replace("bridge:bridge@", "postgres@").replace(/\/bridge$/, "/postgres") });
  await admin.connect();
  let databases = 0;
  const freshDatabase = async () => {
    const name = `bench_${++databases}`;
    await admin.query(`CREATE DATABASE ${name} OWNER bridge`);
    return postgres.url.replace(/\/bridge$/, `/${name}`);
  };
  try {
    const results = { settings: S, loadAverage1m: round(os.loadavg()[0], 2) };
    for (const [name, spec] of Object.entries(S.cases)) {
      const runs = Object.fromEntries(S.servers.map((n) => [n, []]));
      for (let r = 0; r < S.rounds; r++) {
        for (const n of r % 2 === 0 ? S.servers : [...S.servers].reverse()) {
          const figures = await oneRound({ ctx, S, spec, n, databaseUrl: await freshDatabase(), label: `${name}-${n}-r${r}` });
          runs[n].push(figures);
          ctx.log(`  ${name} round ${r + 1}, ${n} server${n > 1 ? "s" : ""}: ${figures.perSec} SMS/s, ${describe(figures)}`);
        }
      }
      results[name] = summarize(runs, S.servers);
    }
    return results;
  } finally {
    await admin.end().catch(() => {});
    postgres.stop();
  }
}

function describe(f) {
  return `keys' most in 1 s ${f.keyMostIn1s}, 429s by address ${f.refusedBy.source}, by key ${f.refusedBy.key}; CPU % servers ${f.cpuPct.join("/")}, machine ${f.machineBusyPct}; load ${f.loadAverage1m}`;
}

/** The median round of each number of servers, the ratio of the medians, and the worst of every round. */
function summarize(runs, counts) {
  const medians = Object.fromEntries(counts.map((n) => [n, median(runs[n].map((f) => f.perSec))]));
  const [one, many] = [counts[0], counts.at(-1)];
  const all = Object.values(runs).flat();
  return {
    perSec: medians,
    ratio: round(medians[many] / medians[one], 2),
    keyMostIn1s: Math.max(...all.map((f) => f.keyMostIn1s)),
    refusedBy: { source: sum(all, (f) => f.refusedBy.source), key: sum(all, (f) => f.refusedBy.key) },
    duplicates: sum(all, (f) => f.duplicates),
    runs,
  };
}

const sum = (list, pick) => list.reduce((total, x) => total + pick(x), 0);

/**
 * One round: a fresh database and fakes, `n` servers, the case's locations installed with a key
 * each, its backlog posted to the servers in turn; SMS accepted per second from `settleSec` after
 * the first (or once every webhook is in, if later) for `windowSec`.
 */
async function oneRound({ ctx, S, spec, n, databaseUrl, label }) {
  const crm = await startFakeCrm();
  const gateway = await startFakeGateway({ perSource: S.perSource, perKey: S.perKey });
  const servers = [];
  try {
    const dir = mkdtempSync(join(ctx.work, `${label}-`));
    const env = { ...bridgeEnv({ cache: ctx.cache, databasePath: "", crmUrl: crm.url, smsUrl: gateway.url }), DATABASE_URL: databaseUrl };
    delete env.DATABASE_PATH;
    const start = (i) =>
      startListening(ctx.binary, ["serve"], { env: { ...env, CAST_LOCAL_ADDRESS: `127.0.0.${i + 2}` }, cwd: dir, logFile: join(dir, `serve-${i}.log`) });
    servers.push(await start(0)); // the first migrates the new database
    servers.push(...(await Promise.all(Array.from({ length: n - 1 }, (_, i) => start(i + 1)))));
    const locations = Array.from({ length: spec.keys }, (_, k) => `loc-servers-${k}`);
    await install(servers[0].url, locations);

    let next = 0;
    const poster = async () => {
      while (next < spec.webhooks) {
        const m = next++;
        const { status } = await postWebhook(servers[m % n].url, `${label}-${m}`, locations[m % spec.keys]);
        if (status !== 200) throw new Error(`${label}: webhook ${m} answered ${status}`);
      }
    };
    await Promise.all(Array.from({ length: S.posters }, poster));
    const posted = performance.now();
    while (gateway.accepted.length === 0 && performance.now() - posted < 10_000) await sleep(50);
    if (gateway.accepted.length === 0) throw new Error(`${label}: no SMS reached the fake Cast within 10 s`);
    const from = Math.max(gateway.accepted[0].at + S.settleSec * 1000, posted);
    const to = from + S.windowSec * 1000;
    await sleep(from - performance.now());
    const samplers = servers.map((s) => sampleProcess(s.child.pid, 1000));
    const machine0 = cpuTimes();
    await sleep(to - performance.now() + 200);
    const cpuPct = samplers.map((s) => s.stop().cpuPct);
    const machineBusyPct = busySince(machine0);
    const inWindow = gateway.accepted.filter((a) => a.at >= from && a.at < to);
    if (inWindow.length >= spec.webhooks - 10) throw new Error(`${label}: the backlog ran out in the window; raise the webhooks`);
    return {
      perSec: round(inWindow.length / S.windowSec, 1),
      bySource: countBy(inWindow, (a) => a.source),
      keyMostIn1s: Math.max(...Object.values(mostIn1s(gateway.accepted))),
      refusedBy: { ...gateway.refusedBy },
      duplicates: gateway.stats.duplicates,
      // % of one core of each server, and of the whole machine (every core, all its processes), in the window.
      cpuPct,
      machineBusyPct,
      loadAverage1m: round(os.loadavg()[0], 2),
    };
  } finally {
    await Promise.all(servers.map((s) => stop(s.child, 3000)));
    if (process.env.BENCH_SERVERS_LOGS) cpSync(join(ctx.work), process.env.BENCH_SERVERS_LOGS, { recursive: true });
    await crm.close();
    await gateway.close();
  }
}

/** Installs each location through OAuth, then gives it its own Cast key through the admin API. */
async function install(url, locations) {
  for (const [k, location] of locations.entries()) {
    const res = await fetch(`${url}/oauth-callback?code=code-${location}`);
    if (res.status !== 200) throw new Error(`install of ${location} answered ${res.status}: ${await res.text()}`);
    const set = await fetch(`${url}/api/admin/locations/${location}/config`, {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ sms_api_key: `bench-servers-key-${k}-0123456789` }),
    });
    if (set.status !== 200) throw new Error(`config of ${location} answered ${set.status}: ${await set.text()}`);
  }
}

/** The machine's busy and total CPU time so far, from /proc/stat (every core). */
function cpuTimes() {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number);
  const idle = fields[3] + fields[4]; // idle, iowait
  const total = fields.reduce((a, b) => a + b, 0);
  return { idle, total };
}

/** % of one core the whole machine was busy since `before` (200 on two cores fully busy). */
function busySince(before) {
  const now = cpuTimes();
  const total = now.total - before.total;
  return total > 0 ? Math.round((100 * os.cpus().length * (total - (now.idle - before.idle))) / total) : NaN;
}

function countBy(list, keyOf) {
  const counts = {};
  for (const x of list) counts[keyOf(x)] = (counts[keyOf(x)] ?? 0) + 1;
  return counts;
}

/** Each key's most SMS accepted within any 1 s (a sliding window over its own sends). */
export function mostIn1s(accepted) {
  const byKey = new Map();
  for (const a of accepted) (byKey.get(a.key) ?? byKey.set(a.key, []).get(a.key)).push(a.at);
  const most = {};
  for (const [key, times] of byKey) {
    times.sort((x, y) => x - y);
    let best = 0;
    for (let i = 0, j = 0; j < times.length; j++) {
      while (times[j] - times[i] >= 1000) i++;
      best = Math.max(best, j - i + 1);
    }
    most[key] = best;
  }
  return most;
}
