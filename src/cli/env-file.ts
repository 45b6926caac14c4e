import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";

/** What decides whether a file may be read: its owner and permission bits. */
export interface FileOwnership {
  uid: number;
  mode: number;
}

/**
 * The variables of an env file. `./.env`, read because it happens to be in the working
 * directory, is read only when it is the user's own (or root's) and nobody else may
 * write it: its variables choose where bridge sends the client secret and tokens
 * (CRM_API_URL), so a `.env` another user left in a shared directory must not count.
 * A file named with `--env-file` is read as named: naming it is the choice.
 * The checks are made on the descriptor that is read, so the file cannot be swapped
 * between them.
 */
export function readEnvFile(path: string, options: { mustBeOurs: boolean }): Record<string, string | undefined> {
  const fd = openSync(path, "r");
  try {
    if (options.mustBeOurs) {
      const problem = envFileProblem(path, fstatSync(fd), process.geteuid?.());
      if (problem) throw new Error(problem);
    }
    return parseEnv(readFileSync(fd, "utf8"));
  } finally {
    closeSync(fd);
  }
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
