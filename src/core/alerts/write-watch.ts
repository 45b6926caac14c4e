import type { Commit } from "../../db/commit.ts";
import { errorMessage } from "../../errors.ts";

/** SQLite's codes for a database that takes no writes at all: a full disk, a read-only file, I/O, a lock held too long. */
const REFUSED = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOMEM|BUSY|LOCKED|NOTADB)/;

/** The database's latest refusal of a write, while no write has gone through since. */
export interface WriteRefusal {
  since: number;
  reason: string;
}

export type WriteWatch = ReturnType<typeof watchWrites>;

/**
 * The group commit, watched: whether the database refuses writes now (an alert condition,
 * src/core/alerts/conditions.ts). A refusal is SQLite refusing the file (its code), not
 * one write's constraint; it lasts until a write goes through again.
 */
export function watchWrites(commit: Commit, now: () => number) {
  let refusal: WriteRefusal | undefined;
  const watched: Commit = (write, atOnce) =>
    commit(write, atOnce).then(
      (value) => {
        refusal = undefined;
        return value;
      },
      (error: unknown) => {
        const code = (error as { code?: unknown } | null)?.code;
        if (typeof code === "string" && REFUSED.test(code)) refusal ??= { since: now(), reason: errorMessage(error) };
        throw error;
      },
    );
  return { commit: watched, refusal: (): WriteRefusal | undefined => refusal };
}
