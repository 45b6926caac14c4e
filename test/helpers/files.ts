import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

// What the checks of test/unit/ read the repository with: its files, and its code without comments.

/** Every file under `dir`, at any depth. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The TypeScript files under `dir`. */
export function tsFilesUnder(dir: string): string[] {
  return filesUnder(dir).filter((file) => file.endsWith(".ts"));
}

/** Code, without its comments: a comment may name what the code must not do. */
export function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}
