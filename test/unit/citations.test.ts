import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect, test } from "vitest";
import { filesUnder } from "../helpers/files.ts";

// Comments (and messages, and the pages themselves) cite the docs by file, and by section:
// `docs/operations.md, "Logs"`.
// When a page or a section moves, each citation of it must move too, or it sends the reader nowhere.

/** Files outside this repository that comments may cite: none (docs/services holds the gateways' references). */
const OUTSIDE = new Set<string>();

const ROOT = process.cwd();
const SOURCES = [
  ...["src", "test", "bench", "scripts"].flatMap((dir) => filesUnder(dir)).filter((f) => /\.(ts|mjs)$/.test(f)),
  "build.mjs",
  "deploy/bridge.service",
  ".env.example",
].filter((file) => file !== "test/unit/citations.test.ts");
const PAGES = ["README.md", ...filesUnder("docs").filter((f) => f.endsWith(".md"))];

function unique<T extends readonly string[]>(rows: T[]): T[] {
  return [...new Map(rows.map((row) => [row.join("\0"), row])).values()];
}

/** The anchors GitHub gives a page's headings. */
function anchors(page: string): Set<string> {
  return new Set(headings(page).map((h) => h.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replaceAll(" ", "-")));
}

function headings(page: string): string[] {
  const text = readFileSync(page, "utf8").replace(/^```[\s\S]*?^```/gm, "");
  return [...text.matchAll(/^#{1,6} +(.+?) *$/gm)].map(([, heading = ""]) => heading.replaceAll("`", ""));
}

/** A cited name as a path from the root: `docs/x.md` as written; a bare `x.md` at the root or in docs/. */
function resolveCited(name: string): string | undefined {
  return [name, join("docs", name)].find((path) => existsSync(path));
}

const fileCitations = SOURCES.flatMap((source) =>
  [...readFileSync(source, "utf8").matchAll(/(?<![\w/.-])((?:docs\/)?[A-Za-z][\w-]*\.md)\b/g)].map(([, name = ""]) => ({ source, name })),
);
// `README, "Section"`, `docs/x.md, "Section"`, or unquoted: `README, Operating bridge`.
const sectionCitations = [...SOURCES, ...PAGES].flatMap((source) =>
  [...readFileSync(source, "utf8").matchAll(/(?<![\w/.-])(README(?:\.md)?|docs\/[\w-]+\.md),\s+(?:"([^"]+)"|([A-Z][\w' -]*\w))/g)].map(
    ([, file = "", quoted, bare]) => ({ source, file: file === "README" ? "README.md" : file, section: quoted ?? bare ?? "" }),
  ),
);

test("comments cite files and sections", () => {
  expect(fileCitations.filter((c) => c.name.startsWith("docs/")).length).toBeGreaterThan(3);
  expect(sectionCitations.length).toBeGreaterThan(1);
});

test.each(unique(fileCitations.filter((c) => !OUTSIDE.has(c.name)).map((c) => [c.source, c.name] as const)))(
  "%s cites %s, a file of this repository",
  (_source, name) => {
    expect(resolveCited(name), `${name} is not in this repository`).toBeDefined();
  },
);

test.each(unique(sectionCitations.map((c) => [c.source, c.file, c.section] as const)))("%s cites %s, section %j, which exists", (_source, file, section) => {
  expect(existsSync(file), `${file} is not in this repository`).toBe(true);
  expect(headings(file).map((h) => h.toLowerCase())).toContain(section.toLowerCase());
});

// The pages link to each other by file and heading: a link to a moved section would lead nowhere.
const links = PAGES.flatMap((page) =>
  [...readFileSync(page, "utf8").matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target = ""]) => target)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => ({ page, target })),
);

test("the pages link to each other", () => {
  expect(links.length).toBeGreaterThan(20);
});

test.each(unique(links.map((l) => [l.page, l.target] as const)))("%s links to %s, which exists", (page, target) => {
  const [path = "", anchor] = target.split("#");
  const file = path === "" ? page : normalize(join(dirname(page), path));
  expect(existsSync(join(ROOT, file)), `${file} does not exist`).toBe(true);
  if (anchor !== undefined) expect([...anchors(file)], `${file} has no heading #${anchor}`).toContain(anchor);
});
