import type { Commit } from "../db/commit.ts";

/** A store's synchronous twin: each method of `T` returning what `T`'s promise holds. */
export type Sync<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never };

/**
 * `T` over its synchronous twin: the methods named in `writes` run in the group commit
 * (each settles once its batch is on disk); the others are reads, run at once. A
 * transaction so never spans an await: the commit runs each write synchronously.
 */
export function facade<T>(sync: Sync<T>, commit: Commit, writes: readonly (keyof T & string)[]): T {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(sync as Record<string, unknown>)) {
    if (typeof method !== "function") continue;
    const run = (args: unknown[]) => method.apply(sync, args) as unknown;
    out[name] = (writes as readonly string[]).includes(name)
      ? (...args: unknown[]) => commit(() => run(args))
      : async (...args: unknown[]) => run(args);
  }
  return out as T;
}
