// Child processes of the benchmark: every one is registered here so that any way
// out of the benchmark (normal end, an error, Ctrl-C, the watchdog) kills them.
// A benchmark that leaves a bridge listening would skew the next run's figures.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const children = new Set();

/** Spawns and registers a child; it is forgotten once it has exited. */
export function track(child) {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** SIGKILL every child still alive. Synchronous, so it is safe in process.on("exit"). */
export function killAll() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  children.clear();
}

export function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
}

/** SIGTERM, then SIGKILL if it has not gone within `graceMs` (bridge waits up to 30 s for in-flight sends). */
export async function stop(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode;
  child.kill("SIGTERM");
  let timer;
  const killed = new Promise((done) => {
    timer = setTimeout(() => {
      child.kill("SIGKILL");
      done("SIGKILL (did not stop within grace)");
    }, graceMs);
  });
  const result = await Promise.race([exited(child), killed]);
  clearTimeout(timer);
  await exited(child);
  return result;
}

/**
 * Starts `cmd args` with stdout+stderr going to `logFile`, and resolves with the URL
 * from its "listening on http://..." line.
 *
 * The log goes to a file rather than a pipe on purpose: Node writes to pipes
 * synchronously on Linux, so a pipe drained by this (busy) benchmark process would
 * throttle bridge's logging, and with it bridge itself, by our own load.
 */
export async function startListening(cmd, args, { env, cwd, logFile, timeoutMs = 15_000 }) {
  const fd = openSync(logFile, "a");
  const child = track(spawn(cmd, args, { env, cwd, stdio: ["ignore", fd, fd] }));
  closeSync(fd); // the child holds its own copy
  let spawnError;
  child.on("error", (error) => (spawnError = error)); // e.g. ENOENT: reported below, not thrown unhandled
  const end = Date.now() + timeoutMs;
  for (;;) {
    const log = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
    const url = /listening on (http:\/\/\S+)/.exec(log)?.[1];
    if (url) return { child, url, logFile };
    if (spawnError || child.exitCode !== null || child.signalCode !== null || Date.now() > end) {
      child.kill("SIGKILL");
      throw new Error(`${cmd} ${args.join(" ")} did not start listening: ${spawnError?.message ?? ""}\n${log.slice(-2000)}`);
    }
    await sleep(20);
  }
}

/**
 * Samples VmRSS (now) and VmHWM (the kernel's own high-water mark) of `pid` every
 * `everyMs`, and the CPU time it used over the window. VmHWM catches a peak between
 * two samples, so it is the figure reported as the peak. CPU time tells whether a
 * server was busy computing or waiting (an fsync blocks without burning CPU).
 */
export function sampleProcess(pid, everyMs = 100) {
  const samples = [];
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
      samples.push({ rssKb: kb("VmRSS"), hwmKb: kb("VmHWM") });
    } catch {
      // the process is gone; the caller notices by other means
    }
  };
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const self0 = process.cpuUsage();
  read();
  const timer = setInterval(read, everyMs);
  return {
    /** Stops sampling; returns the window's figures in MiB (the kernel's KiB / 1024) and CPU use in % of one core. */
    stop() {
      clearInterval(timer);
      read();
      const wallSec = (performance.now() - t0) / 1000;
      const self = process.cpuUsage(self0);
      const mb = (kb) => Math.round((kb / 1024) * 10) / 10;
      const rss = samples.map((s) => s.rssKb).filter(Number.isFinite);
      return {
        samples: samples.length,
        maxRssMb: mb(Math.max(...rss)),
        lastRssMb: mb(rss.at(-1)),
        hwmMb: mb(samples.at(-1)?.hwmKb ?? NaN),
        cpuPct: Math.round((100 * (cpuSeconds(pid) - cpu0)) / wallSec),
        // The load generator and the fakes live in this process: if it is near 100 %,
        // the client, not the server, may be what limits the request rate.
        benchCpuPct: Math.round((100 * (self.user + self.system)) / 1e6 / wallSec),
      };
    },
  };
}

/** utime + stime of `pid` in seconds, from /proc/<pid>/stat (fields 14 and 15). */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields[0] is field 3 (state)
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

// USER_HZ: 100 on every Linux this runs on; getconf tells for sure.
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
