import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { assertBuilt, runBridge } from "../helpers/binary.ts";

// build.mjs trains dist/bridge's code cache and checks it once; these hold the executable
// as shipped to the same (docs/PERFORMANCE.md, "CLI start-up").
const VARIABLE = "BRIDGE_BUILD_WRITE_CODE_CACHE";
let dir: string;

beforeAll(() => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), "bridge-code-cache-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("dist/bridge compiles its main bundle with the code cache it was built with", async () => {
  const out = join(dir, "written.cache");
  const { code, stderr } = await runBridge({ [VARIABLE]: out }, dir, ["--version"]);
  expect(code).toBe(0);
  expect(stderr).not.toContain("code cache not used");
  expect(statSync(out).size).toBeGreaterThan(10_000);
});

test("the code cache variable never overwrites a file that exists", async () => {
  const out = join(dir, "precious");
  writeFileSync(out, "keep me");
  await runBridge({ [VARIABLE]: out }, dir, ["--version"]);
  expect(readFileSync(out, "utf8")).toBe("keep me");
});
