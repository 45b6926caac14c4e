import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { openStore } from "../../src/store/open.ts";
import { postgresMissing } from "../helpers/postgres.ts";
import { postgresBudgetChecks } from "./postgres-budgets.ts";
import { postgresChecks } from "./postgres-checks.ts";
import { postgresLogChecks } from "./postgres-log.ts";
import { postgresLeaseChecks } from "./postgres-leases.ts";
import { postgresFactory } from "./postgres.ts";
import { message, storeCases, type StoreFactory } from "./store-cases.ts";

// The store contract's cases (store-cases.ts), run on each implementation of it.

const sqlite: StoreFactory = {
  name: "sqlite",
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "bridge-store-"));
    const db = openDb(join(dir, "bridge.db"));
    return {
      store: openStore({ encryptionKey: undefined }, db),
      async close() {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

storeCases(sqlite);

// PostgreSQL: a throwaway server for this file (test/helpers/postgres.ts). Where there is
// none the cases are skipped, saying why, except in CI, where that fails.
const missing = postgresMissing();
if (missing && process.env.CI !== "true") {
  test.skip(`postgres: every case (${missing})`, () => {});
} else if (missing) {
  test("postgres: CI has a PostgreSQL to run the store's cases on", () => {
    throw new Error(missing);
  });
} else {
  describe("on a throwaway PostgreSQL", () => {
    const postgres = postgresFactory();
    beforeAll(async () => {
      const startMs = await postgres.start();
      console.info(`PostgreSQL started in ${startMs} ms`);
    });
    afterAll(() => postgres.stop());
    storeCases(postgres.factory);
    postgresChecks(postgres);
    postgresLogChecks(postgres);
    postgresBudgetChecks(postgres);
    postgresLeaseChecks(postgres);
  });
}

test("sqlite: a rare write commits at once; a job's move waits out the window for company", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-store-"));
  const db = openDb(join(dir, "bridge.db"));
  try {
    // A window no test waits out: a write that needed it would time the test out.
    const store = openStore({ encryptionKey: undefined }, db, undefined, { commitWindowMs: 60_000 });
    await store.tokens.save({ locationId: "loc-1", companyId: "co-1", accessToken: "a", refreshToken: "r", expiresAt: 1 }, 1);
    await store.jobs.enqueue(message(1), 1, true);
    const { id } = (await store.jobs.get("msg-1"))!;
    let settled = false;
    const move = store.jobs.reported(id, "delivered", 2).then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(settled).toBe(false);
    await store.gatewayKeys.clearHolds(); // commits at once, and the move waiting with it
    await move;
    expect(settled).toBe(true);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
