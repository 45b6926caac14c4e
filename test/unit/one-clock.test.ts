import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { filesUnder, withoutComments } from "../helpers/files.ts";

// One clock: core reads the system's time only through src/core/clock.ts, the business clock
// (the context's `now`, which tests skew) or the wall clock (real elapsed time), so no call
// can silently escape a test's skewed `now`.

const CLOCK = join("src", "core", "clock.ts");

test("nothing in src/core calls Date.now but the clock", () => {
  const files = filesUnder(join("src", "core")).filter((f) => f.endsWith(".ts") && f !== CLOCK);
  expect(files.length).toBeGreaterThan(50);
  const reads = files.flatMap((file) =>
    withoutComments(readFileSync(file, "utf8"))
      .split("\n")
      .filter((line) => /\bDate\.now\b/.test(line))
      .map((line) => `${file}: ${line.trim()}`),
  );
  expect(reads).toEqual([]);
});

test("the clock itself reads Date.now (the test above looks at real code)", () => {
  expect(withoutComments(readFileSync(CLOCK, "utf8"))).toMatch(/\bDate\.now\b/);
});
