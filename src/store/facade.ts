import type { Commit } from "../db/commit.ts";

/** A store's synchronous twin: each method of `T` returning what `T`'s promise holds. */
export type Sync<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never };

/** A store's writes: `batched`, the busy ones, wait the window for others to share their commit; `alone` commit at once. */
export interface Writes<T> {
  batched?: readonly (keyof T & string)[];
  alone?: readonly (keyof T & string)[];
}

/**
 * `T` over its synchronous twin: its writes run in the group commit (each settles once
 * its batch is on disk); the other methods are reads, run at once. A transaction so
 * never spans an await: the commit runs each write synchronously.
 */
export function facade<T>(sync: Sync<T>, commit: Commit, writes: Writes<T>): T {
  const batched: readonly string[] = writes.batched ?? [];
  const alone: readonly string[] = writes.alone ?? [];
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(sync as Record<string, unknown>)) {
    if (typeof method !== "function") continue;
    const run = (args: unknown[]) => method.apply(sync, args) as unknown;
    if (batched.includes(name)) out[name] = (...args: unknown[]) => commit(() => run(args));
    else if (alone.includes(name)) out[name] = (...args: unknown[]) => commit(() => run(args), true);
    else out[name] = async (...args: unknown[]) => run(args);
  }
  return out as T;
}
