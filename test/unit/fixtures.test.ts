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
