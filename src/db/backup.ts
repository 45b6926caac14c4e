import { chmodSync, closeSync, existsSync, linkSync, openSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Db } from "./index.ts";

/**
 * Writes a consistent copy of the open database to `file` with SQLite's online backup,
 * which a running server may go on writing through. The copy holds tokens and API
 * keys, so it is born 0600 under a temporary name in the same directory and appears
 * under `file` only once complete: never readable by others, never half-written.
 * An existing `file` is refused unless `force`.
 */
export async function writeBackup(db: Db, file: string, options: { force?: boolean } = {}): Promise<string> {
  if (!options.force && existsSync(file)) throw new Error(`${file} already exists; not overwriting it (choose another name, or --force)`);
  if (!existsSync(dirname(file))) throw new Error(`cannot write ${file}: directory ${dirname(file)} does not exist`);
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.partial`);
  closeSync(openSync(temp, "wx", 0o600));
  try {
    // All remaining pages in one step, so one read transaction sees them all: in small
    // steps, every commit of the server in between would restart the copy.
    await db.backup(temp, { progress: () => 0x7fffffff });
    chmodSync(temp, 0o600);
    if (options.force) renameSync(temp, file);
    else linkSync(temp, file); // fails if `file` appeared meanwhile: still no overwrite
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new Error(`${file} already exists; not overwriting it (choose another name, or --force)`, { cause: error });
    }
    throw error;
  } finally {
    rmSync(temp, { force: true });
    rmSync(`${temp}-journal`, { force: true });
  }
  return file;
}
