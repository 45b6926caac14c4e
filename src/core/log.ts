import { createConsola, type ConsolaInstance, type ConsolaReporter } from "consola/core";
import { formatWithOptions } from "node:util";
import type { LogLevel } from "./config.ts";

export type Logger = Pick<ConsolaInstance, "error" | "warn" | "info" | "debug" | "success">;

const LEVELS: Record<LogLevel, number> = { silent: -999, error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

/**
 * Everything goes to stderr: stdout belongs to command output (`--json`), and
 * under systemd both end up in the journal anyway. Callers never pass secrets here.
 */
export function createLogger(level: LogLevel, stream: NodeJS.WritableStream = process.stderr): Logger {
  return createConsola({ level: LEVELS[level], reporters: [lineReporter(stream)] });
}

/**
 * One line per entry: `2026-11-21T14:21:33.123Z [warn] message`. consola's own
 * reporters print a locale time without the date and lay lines out for a terminal;
 * formatting that time also loaded ICU's locale data into the server.
 */
function lineReporter(stream: NodeJS.WritableStream): ConsolaReporter {
  ignoreWriteErrors(stream);
  return {
    log(entry) {
      const text = formatWithOptions({ colors: false, breakLength: Infinity }, ...entry.args);
      stream.write(`${entry.date.toISOString()} [${entry.type}] ${text}\n`);
    },
  };
}

const guarded = new WeakSet<NodeJS.WritableStream>();

/**
 * A log line that cannot be written is dropped: when whatever reads stderr goes away
 * (`bridge serve 2>&1 | head`, a log collector restarting), the EPIPE would otherwise
 * be an unhandled 'error' event and end the server mid-send. There is nowhere left to
 * report it.
 */
function ignoreWriteErrors(stream: NodeJS.WritableStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on("error", () => {});
}
