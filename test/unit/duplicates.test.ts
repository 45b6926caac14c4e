import { spawnSync } from "node:child_process";
import { expect, test } from "vitest";

// No block of six or more lines of src/ is written twice: one piece of code serves where
// the logic is the same. `duplicates` (the team's tool library, on the developers' PATH;
// it reads the files git lists, runs nothing and needs no network) finds the pairs, by
// their lines or by their shape with other names. The pairs it marks boilerplate are what
// every commander subcommand and every options interface look like, and are allowed.
const run = spawnSync("duplicates", ["--repo", "src", "--most", "200", "--seconds", "60"], { encoding: "utf8" });
const missing = (run.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";

// Not every machine has the command (a CI runner may not): there the check is skipped,
// and says so on stderr and in the test's name, so that a green run never hides that it
// did not look. DUPLICATES_REQUIRED=1 (where the command is installed) fails instead.
const MISSING = "the `duplicates` command is not on PATH: src/ was NOT checked for duplicated code";
const required = process.env.DUPLICATES_REQUIRED === "1";
if (missing && !required) console.warn(`WARNING: ${MISSING}${process.env.CI === "true" ? " in this CI run" : ""}`);

const title = "no six lines of src/ are written twice, beyond boilerplate";
test.skipIf(missing && !required)(missing && !required ? `${title} (skipped: ${MISSING})` : title, () => {
  expect(missing, MISSING).toBe(false);
  expect(run.error).toBeUndefined();
  const out = run.stdout;
  expect(out, "duplicates answered nothing readable").toMatch(/^(no duplicates|\d+ pairs? of places)/);
  expect(out, "duplicates did not read the whole tree").not.toMatch(/^incomplete:/m);
  expect(out, "more pairs than --most shows").not.toMatch(/^\(\+\d+ more pairs\)/m);
  const pairs = out.split("\n").filter((line) => /^D\d+ /.test(line));
  expect(pairs.filter((pair) => !/ boilerplate$/.test(pair))).toEqual([]);
});
