import { createConsola, type ConsolaInstance, type ConsolaReporter, type LogObject } from "consola/core";
import { formatWithOptions, inspect } from "node:util";
import type { LogFormat, LogLevel } from "./config.ts";
import { printable, printableJson } from "./printable.ts";

export type Logger = Pick<ConsolaInstance, "error" | "warn" | "info" | "debug" | "success">;

export interface LogOptions {
  /** `text` lines (the default) or one JSON object per line (LOG_FORMAT). */
  format?: LogFormat;
  /** The stream is journald's: each line starts with its syslog priority (see `writesToJournal`). */
  journal?: boolean;
}

const LEVELS: Record<LogLevel, number> = { silent: -999, error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

/**
 * Everything goes to stderr: stdout belongs to command output (`--json`), and
 * under systemd both end up in the journal anyway. Callers never pass secrets here.
 */
export function createLogger(level: LogLevel, stream: NodeJS.WritableStream = process.stderr, options: LogOptions = {}): Logger {
  const format = options.format === "json" ? jsonLine : textLine;
  return createConsola({ level: LEVELS[level], reporters: [lineReporter(stream, format, options.journal ?? false)] });
}

/**
 * True when stderr is connected to the journal. systemd sets JOURNAL_STREAM to the
 * device and inode of the stream it gives a service (systemd.exec(5)); the variable is
 * inherited by whatever the service starts, and by the shells of a terminal started
 * under systemd, so only a match with stderr itself counts.
 */
export function writesToJournal(journalStream: string | undefined, stderr: { dev: number; ino: number } | undefined): boolean {
  return Boolean(journalStream && stderr && journalStream === `${stderr.dev}:${stderr.ino}`);
}

/**
 * One line per entry: `2026-11-21T14:21:33.123Z [warn] message`. consola's own
 * reporters print a locale time without the date and lay lines out for a terminal;
 * formatting that time also loaded ICU's locale data into the server.
 *
 * Messages quote outsiders (a webhook's phone, HighLevel's and Cast's error bodies):
 * their control characters are escaped, so none acts on the terminal that reads the
 * log, and a newline in them cannot forge an entry. Only a logged Error spans lines:
 * its message on the first, then its stack, fields and cause as inspect lays them out.
 */
function textLine(entry: LogObject): string {
  const args = (entry.args as unknown[]).map((arg) => (typeof arg === "string" ? printable(arg) : arg instanceof Error ? errorText(arg) : arg));
  const text = formatWithOptions({ colors: false, breakLength: Infinity }, ...args);
  return `${entry.date.toISOString()} [${entry.type}] ${text.split("\n").map(printable).join("\n")}`;
}

/** An Error as inspect shows it (stack, fields, cause), its message on one line. */
function errorText(error: Error): string {
  const text = inspect(error, { colors: false, breakLength: Infinity });
  const head = `${error.name}: ${error.message}`;
  return text.startsWith(head) ? printable(head) + text.slice(head.length) : printable(text);
}

/**
 * `{"time":…,"level":…,"msg":…}` and the fields of any object logged with the message;
 * an Error goes under `error`. Levels are the five of LOG_LEVEL (consola's "success" is info).
 */
function jsonLine(entry: LogObject): string {
  const texts: unknown[] = [];
  const fields: Record<string, unknown> = {};
  for (const arg of entry.args as unknown[]) {
    if (arg instanceof Error) fields.error = errorFields(arg);
    else if (arg !== null && typeof arg === "object" && !Array.isArray(arg)) Object.assign(fields, arg);
    else texts.push(arg);
  }
  const line: Record<string, unknown> = {
    time: entry.date.toISOString(),
    level: JSON_LEVEL[entry.level] ?? "info",
    msg: formatWithOptions({ colors: false, breakLength: Infinity }, ...texts),
  };
  for (const [key, value] of Object.entries(fields)) if (!(key in line)) line[key] = value;
  try {
    return printableJson(JSON.stringify(line, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value)));
  } catch {
    // A circular object: its text form still says what happened.
    return printableJson(JSON.stringify({ time: line.time, level: line.level, msg: textLine(entry).replace(/^\S+ \[\w+\] /, "") }));
  }
}

const JSON_LEVEL: Record<number, string> = { 0: "error", 1: "warn", 2: "info", 3: "info", 4: "debug", 5: "trace" };

/** sd-daemon(3) priorities by consola level: journald files each line under its own. */
const PRIORITY: Record<number, string> = { 0: "<3>", 1: "<4>", 2: "<6>", 3: "<6>", 4: "<7>", 5: "<7>" };

function errorFields(error: Error): Record<string, unknown> {
  const code = (error as { code?: unknown }).code;
  return { name: error.name, message: error.message, ...(code !== undefined && { code }), stack: error.stack };
}

function lineReporter(stream: NodeJS.WritableStream, format: (entry: LogObject) => string, journal: boolean): ConsolaReporter {
  ignoreWriteErrors(stream);
  return {
    log(entry) {
      let text = format(entry);
      // journald reads the priority of every line it gets: a stack trace's lines too.
      if (journal) text = text.replace(/^/gm, PRIORITY[entry.level] ?? "<6>");
      stream.write(`${text}\n`);
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
