import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";
import { tsFilesUnder } from "../helpers/files.ts";

// No floating promise in src/ (as typescript-eslint's no-floating-promises): a call whose
// value is a promise, standing alone as a statement, neither awaited, returned, handed
// on, nor marked `void` (a deliberate fire-and-forget), nor ending in a `.catch(…)` or a
// `.then(…, onRejected)`. The store's every method returns a promise: one left floating
// is a write nobody waits for, and its failure an unhandled rejection.

function compilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile("tsconfig.json", {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  return { ...parsed!.options, noEmit: true };
}

function isPromise(type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some(isPromise);
  return type.getSymbol()?.name === "Promise";
}

/** `x.catch(…)`, `x.then(…, onRejected)`: the rejection is handled. */
function handled(expression: ts.Expression): boolean {
  if (!ts.isCallExpression(expression) || !ts.isPropertyAccessExpression(expression.expression)) return false;
  const method = expression.expression.name.text;
  return method === "catch" || (method === "then" && expression.arguments.length >= 2);
}

/** Each floating promise in `files`, as `path:line: text`. */
function floatingPromises(files: string[]): string[] {
  const program = ts.createProgram(files, compilerOptions());
  const checker = program.getTypeChecker();
  const found: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if (ts.isExpressionStatement(node)) {
        let expression = node.expression;
        while (ts.isParenthesizedExpression(expression)) expression = expression.expression;
        if (ts.isCallExpression(expression) && !handled(expression) && isPromise(checker.getTypeAtLocation(expression))) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
          found.push(`${file}:${line + 1}: ${node.getText(source).slice(0, 80)}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const EXAMPLE = `const write = async (): Promise<number> => 1;

export async function example(): Promise<number> {
  write();
  write().then(() => 1);
  void write();
  await write();
  write().catch(() => 0);
  write().then(() => 1, () => 0);
  const kept = write();
  await kept;
  return write();
}
`;

/** The process's top: run() answers an exit code for every outcome, and never rejects. */
const TOP = "src/cli/bin.ts:";

test("a promise left alone is found; awaited, returned, void or caught it is not", () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-floating-"));
  try {
    const file = join(dir, "example.ts");
    writeFileSync(file, EXAMPLE);
    expect(floatingPromises([file]).map((f) => f.slice(file.length + 1))).toEqual(["4: write();", "5: write().then(() => 1);"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("no floating promise in src/", () => {
  expect(floatingPromises(tsFilesUnder("src")).filter((f) => !f.startsWith(TOP))).toEqual([]);
}, 60_000);
