import { test } from "vitest";

// The integration suite's PostgreSQL pass where there is no PostgreSQL (vitest.config.ts):
// skipped, saying why, except in CI, where that fails.
const missing = process.env.BRIDGE_POSTGRES_MISSING ?? "";

if (process.env.CI === "true") {
  test("postgres: CI has a PostgreSQL to run the integration suite on", () => {
    throw new Error(missing);
  });
} else {
  test.skip(`postgres: the integration suite (${missing})`, () => {});
}
