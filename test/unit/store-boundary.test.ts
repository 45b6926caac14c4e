import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { tsFilesUnder } from "../helpers/files.ts";

// Only the store opens a transaction or loads the SQLite driver: core asks the store
// contract (src/store/contract.ts), one transaction a method, so a second store can
// stand in for SQLite. The store is src/db/ (SQLite's) and src/store/ (the contract and
// the facade); src/sea/ loads the driver's addon for the single executable.

const STORE = ["src/db/", "src/store/"];
const ADDON_LOADER = "src/sea/";

const outside = tsFilesUnder("src").filter((file) => !STORE.some((dir) => file.startsWith(dir)));

test("no module outside the store opens a transaction", () => {
  expect(outside.filter((file) => /\.transaction\(/.test(readFileSync(file, "utf8")))).toEqual([]);
});

test("no module outside the store imports the SQLite driver", () => {
  const drivers = outside.filter((file) => !file.startsWith(ADDON_LOADER) && /from "better-sqlite3"|import\("better-sqlite3"\)|require\("better-sqlite3"\)/.test(readFileSync(file, "utf8")));
  expect(drivers).toEqual([]);
});
