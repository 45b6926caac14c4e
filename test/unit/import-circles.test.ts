import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { circles, filesUnder, graphOf, importsOf } from "../helpers/imports.ts";

// No import circles in src/ (docs/architecture.md, Layout): a file that imports a file
// which imports it back cannot be read, moved or tested alone. Where two files share a
// type, the type lives in a leaf module beside them that imports neither.
// Type-only imports count: they tie files together as much as value imports do.

test("the parser sees every kind of import, and a circle through a type-only import", () => {
  const graph = graphOf({
    "src/a.ts": 'import { b } from "./b.ts";\nexport const a = b;',
    "src/b.ts": 'import type { C } from "./sub/c.ts";\nexport const b = 1;',
    "src/sub/c.ts": 'export type { A } from "../a.ts";\nexport type C = number;\nconst d = () => import("./d.ts");',
    "src/sub/d.ts": 'import { readFileSync } from "node:fs";\ntype E = import("./e.ts").E;',
    "src/sub/e.ts": "export type E = string;",
  });
  expect(graph.get("src/sub/c.ts")).toEqual(["src/a.ts", "src/sub/d.ts"]);
  expect(graph.get("src/sub/d.ts")).toEqual(["src/sub/e.ts"]);
  expect(circles(graph)).toEqual([["src/a.ts", "src/b.ts", "src/sub/c.ts"]]);
});

test("a tree without loops has no circles", () => {
  const graph = graphOf({
    "src/a.ts": 'import "./b.ts";\nimport "./c.ts";',
    "src/b.ts": 'import "./c.ts";',
    "src/c.ts": "export const c = 1;",
  });
  expect(circles(graph)).toEqual([]);
});

test("no import circle in src/", () => {
  const sources = filesUnder("src").filter((file) => file.endsWith(".ts"));
  expect(sources.length).toBeGreaterThan(50);
  const graph = new Map(sources.map((file) => [file, importsOf(file, readFileSync(file, "utf8"))]));
  expect(circles(graph).map((loop) => loop.join(" -> "))).toEqual([]);
});
