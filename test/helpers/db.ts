import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { openDb, type Db } from "../../src/db/index.ts";
import { createJobStore, type JobStore } from "../../src/db/jobs.ts";
import type { Store } from "../../src/store/contract.ts";
import { openStore } from "../../src/store/open.ts";

/** A fresh bridge database file for each test of the file, in its own temp dir, removed after: `jobs` is SQLite's own job store, `store` the store contract over it. */
export function useTempDb(prefix: string) {
  const ctx = {} as { path: string; db: Db; jobs: JobStore; store: Store; dir: string };
  beforeEach(() => {
    ctx.dir = mkdtempSync(join(tmpdir(), prefix));
    ctx.path = join(ctx.dir, "bridge.db");
    ctx.db = openDb(ctx.path);
    ctx.jobs = createJobStore(ctx.db);
    ctx.store = openStore({ encryptionKey: undefined }, ctx.db);
  });
  afterEach(() => {
    ctx.db.close();
    rmSync(ctx.dir, { recursive: true, force: true });
  });
  return ctx;
}
