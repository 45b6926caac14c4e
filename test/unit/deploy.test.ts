import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { expect, test } from "vitest";

// iproute2 ships a `bridge` command (/usr/sbin/bridge, /sbin/bridge) that root's network
// scripts call by name: ours must not sit in a directory of the usual PATH, where it
// would run in its place (or be hidden by it).
const USUAL_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

const unit = readFileSync("deploy/bridge.service", "utf8");
const operations = readFileSync("docs/operations.md", "utf8");

test("the unit runs the executable docs/operations.md installs, outside the usual PATH", () => {
  const executable = /^ExecStart=(\S+) serve$/m.exec(unit)?.[1];
  expect(executable).toMatch(/\/bridge$/);
  expect(USUAL_PATH).not.toContain(dirname(executable!));
  expect(operations).toContain(`sudo install -D -m 0755 dist/bridge ${executable}\n`);
});

test("every command docs/operations.md runs through sudo, and every install, names that executable in full", () => {
  const executable = /^ExecStart=(\S+) serve$/m.exec(unit)![1]!;
  const viaSudo = operations.split("\n").filter((line) => /^sudo .*-u bridge /.test(line) && / (\S*\/)?bridge --/.test(line));
  expect(viaSudo.length).toBeGreaterThan(0);
  for (const line of viaSudo) expect(line).toContain(`-u bridge ${executable} --`);
  // Installs (the first one, a roll back's) put it there too.
  const installs = operations.split("\n").filter((line) => /^sudo install .*-m 0755 /.test(line));
  expect(installs.length).toBeGreaterThan(1);
  for (const line of installs) expect(line).toContain(` ${executable}`);
});

const analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((path) => existsSync(path));

test.skipIf(!analyze)("systemd-analyze security rates the unit's sandbox OK (exposure below 2.0)", () => {
  // --offline reads the unit file itself: no running systemd is needed.
  const report = execFileSync(analyze!, ["security", "--offline=true", "--no-pager", "deploy/bridge.service"], { encoding: "utf8" });
  const exposure = Number(/Overall exposure level for bridge\.service: ([\d.]+)/.exec(report)?.[1]);
  expect(exposure).toBeLessThan(2);
});
