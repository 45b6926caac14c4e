import { expect, test } from "vitest";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { BASELINE_VERSION, PG_MIGRATIONS } from "../../src/store/postgres/schema.ts";

test("a schema version added to SQLite's migrations is added to PostgreSQL's too", () => {
  // One version number means one schema on both stores: a migration appended to
  // src/db/migrations.ts needs its PostgreSQL twin in src/store/postgres/schema.ts.
  expect(BASELINE_VERSION + PG_MIGRATIONS.length).toBe(MIGRATIONS.length);
});
