import { createConsola, type ConsolaInstance } from "consola";
import type { LogLevel } from "./config.ts";

export type Logger = Pick<ConsolaInstance, "error" | "warn" | "info" | "debug" | "success">;

const LEVELS: Record<LogLevel, number> = { silent: -999, error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

/**
 * Everything goes to stderr: stdout belongs to command output (`--json`), and
 * under systemd both end up in the journal anyway. Callers never pass secrets here.
 */
export function createLogger(level: LogLevel, stream: NodeJS.WriteStream = process.stderr): Logger {
  return createConsola({
    level: LEVELS[level],
    stdout: stream,
    stderr: stream,
    formatOptions: { date: true, colors: false, compact: true },
  });
}
