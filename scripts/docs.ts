import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { VARIABLES, type Variable } from "../src/core/config.ts";

/**
 * `npm run docs`: writes docs/configuration.md's table of variables from `VARIABLES`,
 * the one place each is defined, so the page cannot drift from what bridge reads
 * (test/unit/environment.test.ts fails when the page differs from what this prints).
 */
export const CONFIGURATION_PAGE = "docs/configuration.md";
const BEGIN = "<!-- The table is written by `npm run docs` from VARIABLES (src/core/config.ts): edit it there. -->";
const END = "<!-- end of the generated table -->";

export function configurationTable(): string {
  const rows = Object.entries(VARIABLES).map(([name, variable]: [string, Variable]) =>
    row([
      `\`${name}\``,
      shownDefault(variable),
      variable.requiredBy?.map((need) => `\`${need}\``).join(", ") ?? "",
      variable.serveOnly ? "`serve` only" : "every command",
      variable.about,
    ]),
  );
  return [row(["Variable", "Default", "Required by", "Checked by", "What it is for"]), "|---|---|---|---|---|", ...rows].join("\n");
}

/** `page` with the text between its markers replaced by the table. */
export function withConfigurationTable(page: string): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${CONFIGURATION_PAGE} lacks the markers around its table`);
  return `${page.slice(0, start + BEGIN.length)}\n${configurationTable()}\n${page.slice(end)}`;
}

/** A literal default as code; one too long to show (a PEM block) in words; none: "empty". */
function shownDefault(variable: Variable): string {
  if (variable.shownDefault) return variable.shownDefault;
  return variable.default ? `\`${variable.default}\`` : "empty";
}

function row(cells: string[]): string {
  return `| ${cells.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_PAGE, withConfigurationTable(readFileSync(CONFIGURATION_PAGE, "utf8")));
}
