import { dirname, join, normalize } from "node:path";
import ts from "typescript";

export { filesUnder } from "./files.ts";

// The imports of src/ as a graph, parsed with TypeScript's compiler: what
// test/unit/import-circles.test.ts and test/unit/floors.test.ts hold the code to.
// Type-only imports count: they tie files together as much as value imports do.

/** The files of src/ that `file` imports: static, type-only, re-exports, `import()` and `import("…").T` types. */
export function importsOf(file: string, text: string): string[] {
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
export function circles(graph: Map<string, string[]>): string[][] {
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

export function graphOf(files: Record<string, string>): Map<string, string[]> {
  return new Map(Object.entries(files).map(([file, text]) => [file, importsOf(file, text)]));
}
