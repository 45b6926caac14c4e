import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

// No import circles in src/ (docs/architecture.md, Layout): a file that imports a file
// which imports it back cannot be read, moved or tested alone. Where two files share a
// type, the type lives in a leaf module beside them that imports neither.
// Type-only imports count: they tie files together as much as value imports do.

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The files of src/ that `file` imports: static, type-only, re-exports, `import()` and `import("…").T` types. */
function importsOf(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text);
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteral(node.arguments[0])) {
      specifiers.push(node.arguments[0].text);
    }
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers.filter((s) => s.startsWith(".")).map((s) => normalize(join(dirname(file), s)));
}

/** Each import circle once, as its files in import order, starting from its smallest name. */
function circles(graph: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>();
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") {
        const loop = path.slice(path.indexOf(next));
        const start = loop.indexOf([...loop].sort()[0]!);
        const turned = [...loop.slice(start), ...loop.slice(0, start)];
        found.set(turned.join(" -> "), turned);
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return [...found.values()];
}

function graphOf(files: Record<string, string>): Map<string, string[]> {
  return new Map(Object.entries(files).map(([file, text]) => [file, importsOf(file, text)]));
}

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
