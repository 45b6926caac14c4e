import { readFileSync } from "node:fs";
import ts from "typescript";
import { expect, test } from "vitest";
import { filesUnder } from "../helpers/files.ts";

// Small files, small functions (docs/architecture.md): a reader takes in a file or a
// function at once, and a long one hides where one step ends and the next begins.
// A function that is long for a reason says so on the line just before it, `// long: why`;
// a file, on its first line.

const MAX_FILE_LINES = 250;
const MAX_FUNCTION_LINES = 60;

const sources = filesUnder("src").filter((file) => file.endsWith(".ts"));

/** Each function-like node: declarations, arrows, methods, accessors, constructors, expressions. */
function functions(source: ts.SourceFile): ts.FunctionLikeDeclaration[] {
  const found: ts.FunctionLikeDeclaration[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) found.push(node as ts.FunctionLikeDeclaration);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  return "(anonymous)";
}

/** What this file breaks: `file: N lines` and `file:line name: N lines`, unless excused. */
function overLong(file: string, text = readFileSync(file, "utf8")): string[] {
  const lines = text.split("\n");
  const excused = (line: number) => lines[line - 1]?.trim().startsWith("// long:") === true;
  const problems: string[] = [];
  const fileLines = text.endsWith("\n") ? lines.length - 1 : lines.length;
  if (fileLines > MAX_FILE_LINES && !excused(1)) problems.push(`${file}: ${fileLines} lines`);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  for (const node of functions(source)) {
    const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line; // 0-based: the line before is `start`
    const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
    const length = end - start + 1;
    if (length > MAX_FUNCTION_LINES && !excused(start)) problems.push(`${file}:${start + 1} ${functionName(node)}: ${length} lines`);
  }
  return problems;
}

test("the measure sees functions of every kind, and their nesting", () => {
  const text = [
    "export function a() {}",
    "const b = () => 1;",
    "const c = function () {};",
    "class D { constructor() {} e() {} get f() { return 1; } }",
    "function factory() { return { g() {}, h: () => 2 }; }",
  ].join("\n");
  const names = functions(ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, true)).map(functionName);
  expect(names).toEqual(["a", "b", "c", "constructor", "e", "f", "factory", "g", "h"]);
});

const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const a${i} = ${i};`);
test.each([
  ["a function of 60 lines passes", ["function f() {", ...body(60), "}"], []],
  ["a function of 61 lines is named", ["function f() {", ...body(61), "}"], ["x.ts:1 f: 61 lines"]],
  ["unless the line before says why", ["// long: a table", "function f() {", ...body(61), "}"], []],
  [
    "a factory counts with the methods it returns",
    ["function make() {", ...body(30), "  return {", "    m() {", ...body(30), "    },", "  };", "}"],
    ["x.ts:1 make: 62 lines"],
  ],
  ["a file of 251 lines is named", Array.from({ length: 251 }, () => "let x;"), ["x.ts: 251 lines"]],
])("%s", (_, lines, expected) => {
  expect(overLong("x.ts", `${lines.join("\n")}\n`)).toEqual(expected);
});

test("src has files to measure", () => {
  expect(sources.length).toBeGreaterThan(50);
});

test(`no file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}, unless a "// long:" comment says why`, () => {
  const problems = sources.flatMap((file) => overLong(file));
  expect(problems).toEqual([]);
});
