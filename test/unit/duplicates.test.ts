import { spawnSync } from "node:child_process";
import { expect, test } from "vitest";

// No block of six or more lines of src/ is written twice: one piece of code serves where
// the logic is the same. `duplicates` (the team's tool library, on the developers' PATH;
// it reads the files git lists, runs nothing and needs no network) finds the pairs, by
// their lines or by their shape with other names. The pairs it marks boilerplate are what
// every commander subcommand and every options interface look like, and are allowed.
const run = spawnSync("duplicates", ["--repo", "src", "--most", "200", "--seconds", "60"], { encoding: "utf8" });
const missing = (run.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";

test.skipIf(missing)("no six lines of src/ are written twice, beyond boilerplate", () => {
  expect(run.error).toBeUndefined();
  const out = run.stdout;
  expect(out, "duplicates answered nothing readable").toMatch(/^(no duplicates|\d+ pairs? of places)/);
  expect(out, "duplicates did not read the whole tree").not.toMatch(/^incomplete:/m);
  expect(out, "more pairs than --most shows").not.toMatch(/^\(\+\d+ more pairs\)/m);
  const pairs = out.split("\n").filter((line) => /^D\d+ /.test(line));
  expect(pairs.filter((pair) => !/ boilerplate$/.test(pair))).toEqual([]);
});
