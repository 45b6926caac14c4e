import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The documented example answers of the services bridge talks to: `test/fixtures/`, a
 * copy of the team's `../shared/fixtures` (docs/services/cast-api.md's, HighLevel's and the Android
 * gateway's examples, field for field, each folder's README naming its sources), kept in the
 * repository so that a clone runs its tests alone. `fixtures.test.ts` holds the copy to
 * `../shared/fixtures` wherever that folder is beside the repository.
 */
export const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/**
 * Documented answers of services `../shared/fixtures` has no folder for, quoted from their
 * documentation found with `search`: `test/documented/alert-webhook/`, the incoming webhooks'
 * answers in Slack's and Mattermost's words, its README quoting each source and saying which
 * part of an answer the documentation gives and which is filled.
 */
export const DOCUMENTED = join(import.meta.dirname, "..", "documented");

/** One fixture, parsed: e.g. `fixture("cast", "logs-200.json")`. */
export function fixture<T = Record<string, unknown>>(service: "cast" | "highlevel" | "android", name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, service, name), "utf8")) as T;
}

/** A documented answer whose body is plain text: its status, the number its file's name ends in. */
export interface TextAnswer {
  status: number;
  body: string;
}

/**
 * One plain-text answer of `test/documented/`, its body as the file holds it, byte for byte: e.g.
 * `textFixture("alert-webhook", "no-service-404.txt")` is `{ status: 404, body: "no_service" }`.
 */
export function textFixture(service: "alert-webhook", name: string): TextAnswer {
  const status = /-(\d{3})\.txt$/.exec(name)?.[1];
  if (status === undefined) throw new Error(`${service}/${name}: a text answer's name ends in its status, e.g. post-200.txt`);
  return { status: Number(status), body: readFileSync(join(DOCUMENTED, service, name), "utf8") };
}
