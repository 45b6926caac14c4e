import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FIXTURES } from "../helpers/fixtures.ts";

/**
 * test/fixtures is a copy of the team's ../shared/fixtures, the services' documented
 * answers the fakes answer like: byte for byte, every file of it, so that a change there
 * reaches the fakes. Beside a clone that has no ../shared (a newcomer's), the copy is all
 * there is and this check has nothing to compare with.
 */
const SHARED = join(import.meta.dirname, "..", "..", "..", "shared", "fixtures");

describe.skipIf(!existsSync(SHARED))("test/fixtures is ../shared/fixtures, byte for byte", () => {
  // Read only where the folder is: a skipped describe still runs its body to collect tests.
  const services = existsSync(SHARED) ? readdirSync(SHARED, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name) : [];

  test("the same services", () => {
    expect(services.length).toBeGreaterThan(0);
    expect(readdirSync(FIXTURES).sort()).toEqual([...services].sort());
  });

  test.each(services)("%s: the same files, the same bytes", (service) => {
    const names = readdirSync(join(SHARED, service)).sort();
    expect(readdirSync(join(FIXTURES, service)).sort()).toEqual(names);
    for (const name of names) {
      expect(readFileSync(join(FIXTURES, service, name), "utf8"), `${service}/${name}`).toBe(readFileSync(join(SHARED, service, name), "utf8"));
    }
  });
});

/**
 * docs/services holds copies of the team's restatements of Cast's and SMS Gateway for
 * Android's APIs in ../shared, which comments cite: held to them the same way.
 */
const SHARED_DOCS = join(SHARED, "..");
// Written without their extension, so the citations check does not read them as citations.
const COPIES = [
  ["CAST_API", "cast-api"],
  ["ANDROID_GATEWAY_API", "android-gateway-api"],
];

describe.skipIf(!existsSync(SHARED_DOCS))("docs/services is the team's API restatements, byte for byte", () => {
  test.each(COPIES)("../shared/%s is docs/services/%s", (shared, copy) => {
    const docs = join(import.meta.dirname, "..", "..", "docs", "services");
    expect(readFileSync(join(docs, `${copy}.md`), "utf8")).toBe(readFileSync(join(SHARED_DOCS, `${shared}.md`), "utf8"));
  });
});
