import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The documented example answers of the services bridge talks to: `test/fixtures/`, a
 * copy of the team's `../shared/fixtures` (docs/services/cast-api.md's and HighLevel's examples, field
 * for field, each folder's README naming its sources), kept in the repository so that a
 * clone runs its tests alone. `fixtures.test.ts` holds the copy to `../shared/fixtures`
 * wherever that folder is beside the repository.
 */
export const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** One fixture, parsed: e.g. `fixture("cast", "logs-200.json")`. */
export function fixture<T = Record<string, unknown>>(service: "cast" | "highlevel" | "android", name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, service, name), "utf8")) as T;
}

/**
 * Documented answers of services `../shared/fixtures` has no folder for (test/documented/, each
 * folder's README quoting its sources): e.g. `documented("alert-webhook", "answers.json")`.
 */
export const DOCUMENTED = join(import.meta.dirname, "..", "documented");

export function documented<T = Record<string, unknown>>(service: "alert-webhook", name: string): T {
  return JSON.parse(readFileSync(join(DOCUMENTED, service, name), "utf8")) as T;
}
