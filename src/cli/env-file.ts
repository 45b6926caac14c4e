import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { parseEnv } from "node:util";

/** What decides whether a file may be read: its owner and permission bits. */
export interface FileOwnership {
  uid: number;
  mode: number;
}

/** An env file holds a few dozen lines; more than this is not one. */
export const ENV_FILE_MAX_BYTES = 1024 * 1024;

/**
 * The variables of an env file. `./.env`, read because it happens to be in the working
 * directory, is read only when it is the user's own (or root's) and nobody else may
 * write it: its variables choose where bridge sends the client secret and tokens
 * (CRM_API_URL), so a `.env` another user left in a shared directory must not count.
 * It must also be a regular file: it is opened without waiting (a named pipe would
 * hold every command until someone writes to it) and read only up to ENV_FILE_MAX_BYTES.
 * A symlink is followed: the checks are of the file it leads to, so one to another
 * user's file is refused, and one to a file of ours reads only what we could anyway.
 * A file named with `--env-file` is read as named: naming it is the choice, and a pipe
 * (`--env-file <(decrypt …)`) is a fair one. The checks are made on the descriptor that
 * is read, so the file cannot be swapped between them.
 */
export function readEnvFile(path: string, options: { mustBeOurs: boolean; warn?: (message: string) => void }): Record<string, string | undefined> {
  const fd = openSync(path, options.mustBeOurs ? constants.O_RDONLY | constants.O_NONBLOCK : "r");
  try {
    const stats = fstatSync(fd);
    if (options.mustBeOurs) {
      const problem = notRegular(path, stats) ?? envFileProblem(path, stats, process.geteuid?.());
      if (problem) throw new Error(problem);
    }
    const vars = parseEnv(readBounded(fd, path));
    const exposed = stats.isFile() ? exposedSecrets(path, stats.mode, vars) : undefined;
    if (exposed) options.warn?.(exposed);
    return vars;
  } finally {
    closeSync(fd);
  }
}

/** The file's text, refused past ENV_FILE_MAX_BYTES instead of read whole into memory. */
function readBounded(fd: number, path: string): string {
  const buffer = Buffer.alloc(ENV_FILE_MAX_BYTES + 1);
  let length = 0;
  while (length < buffer.length) {
    const n = readSync(fd, buffer, length, buffer.length - length, null);
    if (n === 0) break;
    length += n;
  }
  if (length > ENV_FILE_MAX_BYTES) throw new Error(`refusing ${path}: it is larger than ${ENV_FILE_MAX_BYTES} bytes, too large for an env file`);
  return buffer.toString("utf8", 0, length);
}

/** The variables whose values are secrets: whoever reads one can act as bridge. */
const SECRET_VARIABLES = ["CRM_CLIENT_SECRET", "CRM_SHARED_SECRET", "SMS_API_KEY", "INBOUND_API_KEY", "METRICS_TOKEN", "BRIDGE_ENCRYPTION_KEY", "DATABASE_URL"];

/**
 * The warning for an env file that holds a secret and that group or others may read (a
 * `.env` copied with the default umask is 0644); undefined when there is none to give.
 * Read anyway: refusing it would stop a running deployment over a mode it always had.
 */
export function exposedSecrets(path: string, mode: number, vars: Record<string, string | undefined>): string | undefined {
  if (!(mode & 0o044)) return undefined;
  // DATABASE_URL is a secret when it carries the password (not when PGPASSWORD or ~/.pgpass does).
  const held = SECRET_VARIABLES.filter((name) => vars[name] && (name !== "DATABASE_URL" || URL.parse(vars[name])?.password));
  if (held.length === 0) return undefined;
  const shown = (mode & 0o777).toString(8).padStart(4, "0");
  return `${path} holds ${held.join(", ")} and other users may read it (mode ${shown}): run chmod 600 ${path}`;
}

function notRegular(path: string, stats: Stats): string | undefined {
  if (stats.isFile()) return undefined;
  const kind = stats.isFIFO() ? "a named pipe" : stats.isDirectory() ? "a directory" : stats.isSocket() ? "a socket" : "a device";
  return `refusing ${path}: it is ${kind}, not a regular file. Remove it, or set the variables in the environment, or name a file with --env-file`;
}

/**
 * Why `path` is not read, or undefined when it may be: it must belong to `me` or root,
 * and not be writable by group or others. `me` undefined (Windows): no owners to check.
 */
export function envFileProblem(path: string, file: FileOwnership, me: number | undefined): string | undefined {
  if (me === undefined) return undefined;
  const instead = "or set the variables in the environment, or name a file of yours with --env-file";
  if (file.uid !== me && file.uid !== 0) {
    return `refusing ${path}: it belongs to uid ${file.uid}, not to you (uid ${me}) or root, and whoever writes it decides where bridge sends its secrets. If the file is yours, chown it to yourself (chown "$(id -u)" ${path}); otherwise remove it, ${instead}`;
  }
  if (file.mode & 0o022) {
    const mode = (file.mode & 0o777).toString(8).padStart(4, "0");
    return `refusing ${path}: it is writable by group or others (mode ${mode}), and whoever writes it decides where bridge sends its secrets. Run chmod go-w ${path}, ${instead}`;
  }
  return undefined;
}
