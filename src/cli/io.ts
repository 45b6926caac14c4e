import { writeSync } from "node:fs";
import { ID_RULE, isId } from "../core/ids.ts";
import { printable, printableJson } from "../core/printable.ts";
import { readStdinLine } from "./stdin.ts";

/** Outside text in human output: control characters shown as escapes (see table). */
export { printable };

/** Where a command writes and what environment it sees; tests pass their own. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /**
   * One line of standard input without its line ending; from a terminal, typed after
   * `prompt` without echo. Absent: this Io has no standard input.
   */
  readLine?(prompt: string): Promise<string>;
  /** True when standard error is a terminal (progress is shown there only then). */
  errIsTerminal?(): boolean;
}

export const processIo: Io = {
  out: (text) => writeAll(1, text),
  err: (text) => writeAll(2, text),
  env: process.env,
  readLine: readStdinLine,
  // Loaded when asked: node:tty is not needed by commands that show no progress.
  errIsTerminal: () => process.getBuiltinModule("node:tty").isatty(2),
};

/** A usage mistake: exit code 2, like commander's own. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A location id from the command line, checked before it reaches the store or a log. */
export function locationArg(value: string): string {
  if (!isId(value)) throw new UsageError(`not a location id: ${JSON.stringify(value.slice(0, 70))} (it ${ID_RULE})`);
  return value;
}

/**
 * Plain aligned columns for people; scripts use --json. Cells often hold outside text
 * (names, reasons, error bodies): shown with their control characters escaped.
 */
export function table(headers: string[], cellsOf: string[][]): string {
  const rows = cellsOf.map((cells) => cells.map(printable));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd();
  return [line(headers), ...rows.map(line)].join("\n") + "\n";
}

export function json(value: unknown): string {
  return `${printableJson(JSON.stringify(value, null, 2))}\n`;
}

/**
 * Writes straight to the file descriptor, so output is complete when the call
 * returns (`bridge locations list --json | jq` gets all of it even though the
 * process exits right after), and a command never loads node's stream machinery
 * (part of every command's start-up).
 */
function writeAll(fd: number, text: string): void {
  let bytes = Buffer.from(text);
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EPIPE") return; // The reader is gone (`… | head`): nobody to write to.
      if (code !== "EAGAIN") throw error;
      // A full pipe someone else made non-blocking: wait a moment, then go on.
      Atomics.wait(PAUSE, 0, 0, 5);
    }
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));
