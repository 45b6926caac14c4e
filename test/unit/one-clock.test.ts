import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";

// One clock: core reads the system's time only through src/core/clock.ts, the business clock
// (the context's `now`, which tests skew) or the wall clock (real elapsed time), so no call
// can silently escape a test's skewed `now`.

const CLOCK = join("src", "core", "clock.ts");

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Code, without its comments: a comment may name Date.now. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

test("nothing in src/core calls Date.now but the clock", () => {
  const files = filesUnder(join("src", "core")).filter((f) => f.endsWith(".ts") && f !== CLOCK);
  expect(files.length).toBeGreaterThan(50);
  const reads = files.flatMap((file) =>
    code(readFileSync(file, "utf8"))
      .split("\n")
      .filter((line) => /\bDate\.now\b/.test(line))
      .map((line) => `${file}: ${line.trim()}`),
  );
  expect(reads).toEqual([]);
});

test("the clock itself reads Date.now (the test above looks at real code)", () => {
  expect(code(readFileSync(CLOCK, "utf8"))).toMatch(/\bDate\.now\b/);
});
