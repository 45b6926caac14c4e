import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";

// In dist/bridge the CLI and src/sea/heavy.ts are two bundles, each with its own copy of
// the core's classes: an AppError thrown by heavy code is not `instanceof` the CLI's
// AppError. So the CLI may test by class only what it defines itself, commander's
// classes and the language's own.
const BUILT_IN = new Set(["Error", "TypeError", "RangeError", "SyntaxError", "Date", "Array", "Buffer", "Uint8Array"]);

const files = readdirSync("src/cli").filter((file) => file.endsWith(".ts"));
const code = (file: string) => readFileSync(join("src/cli", file), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
const defines = (source: string, name: string) => new RegExp(`\\bclass ${name}\\b`).test(source);

test.each(files)("src/cli/%s tests by class only for classes the CLI can trust", (file) => {
  const source = code(file);
  for (const [, name = ""] of source.matchAll(/\binstanceof\s+(\w+)/g)) {
    const from = new RegExp(`import\\s*(?:type\\s*)?\\{[^}]*\\b${name}\\b[^}]*\\}\\s*from\\s*"([^"]+)"`).exec(source)?.[1];
    // A CLI module's class counts when that module defines it, not when it passes one on.
    const fromCli = from?.startsWith("./") === true && defines(code(from.slice(2)), name);
    const trusted = BUILT_IN.has(name) || from === "commander" || fromCli || defines(source, name);
    expect(trusted, `${file}: instanceof ${name}, imported from ${from ?? "nowhere"}`).toBe(true);
  }
});
