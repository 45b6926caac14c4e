import { configDefaults, defineConfig } from "vitest/config";
import { postgresMissing } from "./test/helpers/postgres.ts";
import { SQLITE_ONLY_FILES } from "./test/helpers/sqlite-only.ts";

// Two passes (projects): every test on SQLite, then the integration suite again on
// PostgreSQL (BRIDGE_TEST_STORE=postgres: test/helpers/test-store.ts, a throwaway server
// per file), but for the files that reach into SQLite itself (test/helpers/sqlite-only.ts).
// Where PostgreSQL is missing, that pass is one test saying why: skipped, or failed in CI.
// One pass alone: `vitest run --project sqlite …` or `--project postgres …`.
const missing = postgresMissing();

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: "sqlite", include: ["test/**/*.test.ts"], env: { BRIDGE_TEST_STORE: "sqlite" } } },
      {
        extends: true,
        test: {
          name: "postgres",
          include: missing ? ["test/helpers/postgres-missing.check.ts"] : ["test/integration/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...Object.keys(SQLITE_ONLY_FILES)],
          env: { BRIDGE_TEST_STORE: "postgres", BRIDGE_POSTGRES_MISSING: missing ?? "" },
          setupFiles: ["test/helpers/postgres-setup.ts"],
        },
      },
    ],
  },
});
