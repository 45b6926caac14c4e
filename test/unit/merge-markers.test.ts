import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";

// A merge left unresolved in a page compiles and passes every other check: TypeScript
// reads only code, and a doc's stray conflict markers are just text.
test("no tracked file holds a conflict marker", () => {
  const files = execFileSync("git", ["ls-files", "src", "test", "docs", "bench", "deploy", "README.md", "build.mjs", ".ci"], { encoding: "utf8" })
    .split("\n")
    .filter((f) => f && !f.startsWith("test/fixtures/"));
  expect(files.length).toBeGreaterThan(100);
  const marked = files.filter((f) => /^(<{7}|>{7}) /m.test(readFileSync(f, "utf8")));
  expect(marked).toEqual([]);
});
