import { VARIABLES, type Variable } from "../core/config.ts";

/** One environment variable, as `--help` shows it. */
interface HelpLine {
  name: string;
  about: string;
  default?: string;
}

/** Every variable of bridge's configuration, as `bridge --help` and `bridge serve --help` list them. */
export const CONFIG_VARIABLES: readonly HelpLine[] = Object.entries(VARIABLES).map(([name, variable]: [string, Variable]) => ({
  name,
  about: variable.requiredBy ? `${variable.about} (required: ${variable.requiredBy.join(", ")})` : variable.about,
  default: variable.shownDefault ?? variable.default,
}));

/** What `serve` reads besides its configuration: read by Node, libuv or the executable itself. */
const SERVE_RUNTIME: readonly HelpLine[] = [
  { name: "XDG_CACHE_HOME", about: "where the executable unpacks its SQLite addon", default: "~/.cache" },
  { name: "UV_THREADPOOL_SIZE", about: "threads that verify webhook signatures", default: "one per CPU core, at least 2" },
  { name: "JOURNAL_STREAM", about: "set by systemd: when it names stderr, each log line starts with its syslog priority" },
  { name: "NODE_USE_ENV_PROXY", about: "1: call HighLevel and Cast through HTTPS_PROXY / HTTP_PROXY (NO_PROXY excepted)" },
  { name: "NODE_EXTRA_CA_CERTS", about: "PEM file of extra certificate authorities for HighLevel and Cast" },
];

const FROM = "also read from --env-file, or ./.env when it is yours or root's and not writable by others; the real environment wins";

/** The root command's list: the configuration, for every command. */
export function environmentHelp(): string {
  return `\nEnvironment (${FROM}):\n${lines(CONFIG_VARIABLES)}\n\nExit codes: 0 success, 1 failure, 2 usage error.`;
}

/** `serve --help`: everything serve reads. */
export function serveEnvironmentHelp(): string {
  return `\nEnvironment read by serve (${FROM}):\n${lines(CONFIG_VARIABLES)}\n\nAlso read by serve:\n${lines(SERVE_RUNTIME)}`;
}

function lines(variables: readonly HelpLine[]): string {
  const width = Math.max(...variables.map((v) => v.name.length)) + 2;
  return variables.map((v) => `  ${v.name.padEnd(width)}${v.about}${v.default ? ` (default: ${v.default})` : ""}`).join("\n");
}
