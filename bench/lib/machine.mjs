// What the bench ran on: figures from different machines do not compare.
import { readFileSync } from "node:fs";
import os from "node:os";
import { round } from "./stats.mjs";

export function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memoryGb: round(os.totalmem() / 2 ** 30, 1),
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  };
}

/** The filesystem type under `path` (fsync costs differ wildly between tmpfs and a disk). */
export function filesystemOf(path) {
  try {
    const mounts = readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((line) => line.split(" "))
      .filter((f) => f.length > 2 && (path === f[1] || path.startsWith(f[1].endsWith("/") ? f[1] : `${f[1]}/`)))
      .sort((a, b) => b[1].length - a[1].length);
    return mounts[0]?.[2] ?? "unknown";
  } catch {
    return "unknown";
  }
}
