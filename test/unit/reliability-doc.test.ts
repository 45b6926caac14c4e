import { existsSync, readFileSync } from "node:fs";
import { expect, test } from "vitest";

// docs/RELIABILITY.md sets each promise beside the test that proves it, as
// `file.test.ts` "title" (a title may be shortened with "…"). A renamed test must not
// leave the promise pointing at nothing.
const doc = readFileSync("docs/RELIABILITY.md", "utf8");
const references = [...doc.matchAll(/`((?:test\/)?[\w/.-]+\.test\.ts)`((?:\s*"[^"]+",?)*)/g)].map(([, file = "", titles = ""]) => ({
  file,
  titles: [...titles.matchAll(/"([^"]+)"/g)].map(([, title = ""]) => title),
}));

function source(file: string): string | undefined {
  const path = [file, `test/${file}`, `test/integration/${file}`].find((p) => p.startsWith("test/") && existsSync(p));
  return path === undefined ? undefined : readFileSync(path, "utf8");
}

test("the document names tests", () => {
  expect(references.filter((r) => r.titles.length > 0).length).toBeGreaterThan(20);
});

test.each(references.map((r) => [r.file, r.titles] as const))("%s %j exists", (file, titles) => {
  const text = source(file);
  expect(text, `no test file ${file}`).toBeDefined();
  for (const title of titles) {
    for (const part of title.split("…").map((p) => p.trim()).filter(Boolean)) expect(text, `${file}: "${title}"`).toContain(part);
  }
});
