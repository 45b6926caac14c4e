import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { circles, filesUnder, graphOf, importsOf } from "../helpers/imports.ts";

// The floors of src/ (docs/architecture.md, Layout), lowest first: a file imports only
// from its own floor or below, type-only imports included; and the rooms of core import
// one another without a loop, so each room can be read knowing only those below it.

const ROOMS = ["delivery", "installs", "inbound", "operator", "app", "alerts"];

/** Files that sit on a floor other than their folder's, each with the reason. */
const PLACED: Record<string, number> = {
  // The SQLite addon's loader: the store opens SQLite with it.
  "src/sea/addon.ts": 0,
  "src/sea/addon-cache.ts": 0,
  // `bridge doctor` builds a core of its own to check with, as `serve` does.
  "src/core/operator/doctor.ts": 3,
};

/** 0 the store, 1 core's ground floor, 2 the rooms, 3 the wiring, 4 the server, the CLI and the executable. */
function floorOf(file: string): number {
  if (!file.startsWith("src/")) return 0;
  if (file in PLACED) return PLACED[file]!;
  if (file === "src/errors.ts" || /^src\/(db|store)\//.test(file)) return 0;
  if (/^src\/(server|cli|sea)\//.test(file)) return 4;
  if (/^src\/core\/(index|core-types|run)\.ts$/.test(file) || /^src\/core\/\w+\/wire\.ts$/.test(file)) return 3;
  if (roomOf(file) !== null) return 2;
  if (/^src\/core\//.test(file)) return 1;
  throw new Error(`${file} is on no floor`);
}

function roomOf(file: string): string | null {
  const room = /^src\/core\/(\w+)\//.exec(file)?.[1];
  return room !== undefined && ROOMS.includes(room) ? room : null;
}

function upFloor(graph: Map<string, string[]>): string[] {
  return [...graph].flatMap(([file, imports]) =>
    imports.filter((to) => floorOf(to) > floorOf(file)).map((to) => `${file} (${floorOf(file)}) -> ${to} (${floorOf(to)})`),
  );
}

/** The graph of rooms importing rooms, from the rooms' own files (floor 2). */
function roomGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const rooms = new Map<string, Set<string>>(ROOMS.map((room) => [room, new Set()]));
  for (const [file, imports] of graph) {
    const from = floorOf(file) === 2 ? roomOf(file) : null;
    if (from === null) continue;
    for (const to of imports.map(roomOf)) if (to !== null && to !== from) rooms.get(from)!.add(to);
  }
  return new Map([...rooms].map(([room, to]) => [room, [...to].sort()]));
}

test("each file's floor, and an import up a floor is found", () => {
  expect(["src/db/jobs.ts", "src/sea/addon.ts", "src/core/phone.ts", "src/core/clients/cast.ts"].map(floorOf)).toEqual([0, 0, 1, 1]);
  expect(["src/core/delivery/worker.ts", "src/core/delivery/wire.ts", "src/core/run.ts", "src/server/app.ts", "src/sea/heavy.ts"].map(floorOf)).toEqual([2, 3, 3, 4, 4]);
  const graph = graphOf({
    "src/core/phone.ts": 'import type { Job } from "./delivery/worker.ts";',
    "src/core/delivery/worker.ts": 'import { b } from "../../db/jobs.ts";',
    "src/db/jobs.ts": "export const b = 1;",
  });
  expect(upFloor(graph)).toEqual(["src/core/phone.ts (1) -> src/core/delivery/worker.ts (2)"]);
});

test("a loop between rooms is found, and a room's wiring is not in it", () => {
  const graph = graphOf({
    "src/core/inbound/a.ts": 'import "../delivery/b.ts";',
    "src/core/delivery/b.ts": 'import "../operator/c.ts";',
    "src/core/operator/c.ts": 'import "../inbound/a.ts";',
    "src/core/installs/wire.ts": 'import "../app/d.ts";',
    "src/core/app/d.ts": 'import "../installs/e.ts";',
  });
  expect(circles(roomGraph(graph))).toEqual([["delivery", "operator", "inbound"]]);
});

test("no file of src/ imports from a floor above its own", () => {
  const sources = filesUnder("src").filter((file) => file.endsWith(".ts"));
  const graph = new Map(sources.map((file) => [file, importsOf(file, readFileSync(file, "utf8"))]));
  expect(upFloor(graph)).toEqual([]);
});

test("the rooms import one another without a loop", () => {
  const sources = filesUnder("src").filter((file) => file.endsWith(".ts"));
  const graph = new Map(sources.map((file) => [file, importsOf(file, readFileSync(file, "utf8"))]));
  expect(circles(roomGraph(graph)).map((loop) => loop.join(" -> "))).toEqual([]);
});
