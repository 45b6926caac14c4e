import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The documented example answers of the services bridge talks to: `../shared/fixtures`
 * beside the repository (CAST_API.md's examples, field for field). A worktree sits one
 * level deeper, so the nearest `shared/fixtures` up the tree is taken; BRIDGE_FIXTURES
 * names another place.
 */
export const FIXTURES = findFixtures();

/** One fixture, parsed: e.g. `fixture("cast", "logs-200.json")`. */
export function fixture<T = Record<string, unknown>>(service: "cast" | "highlevel" | "android", name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, service, name), "utf8")) as T;
}

function findFixtures(): string {
  if (process.env.BRIDGE_FIXTURES) return resolve(process.env.BRIDGE_FIXTURES);
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
  for (let dir = dirname(repo); ; dir = dirname(dir)) {
    const candidate = join(dir, "shared", "fixtures");
    if (existsSync(join(candidate, "cast"))) return candidate;
    if (dirname(dir) === dir) break;
  }
  throw new Error(`no shared/fixtures above ${repo}: the services' documented answers live in ../shared/fixtures (or set BRIDGE_FIXTURES)`);
}
