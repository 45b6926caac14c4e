import { expect, test } from "vitest";
import { commandsFor, run } from "../../src/cli/index.ts";

const NAMES = ["serve", "locations", "messages", "optouts", "status", "usage", "config", "token", "install-url", "android", "alerts", "migrate", "backup", "doctor", "rekey"];

async function output(...args: string[]) {
  let text = "";
  const code = await run(args, { out: (t) => (text += t), err: (t) => (text += t), env: {} });
  return { code, text };
}

test("a command named after the global options is the only one built", () => {
  expect(commandsFor(["locations", "list", "--json"])).toHaveLength(1);
  expect(commandsFor(["--db", "x.db", "--env-file=.env", "messages", "show", "m1"])).toHaveLength(1);
  expect(commandsFor(["--db=x.db", "locations"])).toEqual(commandsFor(["locations", "--db", "x.db"]));
  expect(commandsFor(["--db", "locations", "status"])).toEqual(commandsFor(["status"]));
});

test("help, a mistyped command or another option first build every command", () => {
  for (const argv of [[], ["--help"], ["help", "locations"], ["location", "list"], ["-v"], ["--json", "locations"], ["--", "status"]]) {
    expect(commandsFor(argv), argv.join(" ")).toHaveLength(NAMES.length);
  }
});

test("bridge --help lists every command", async () => {
  const { code, text } = await output("--help");
  expect(code).toBe(0);
  for (const name of NAMES) expect(text).toMatch(new RegExp(`^  ${name}\\b`, "m"));
});

test.each(NAMES)("%s --help, built alone, reads as `help %s` among all", async (name) => {
  const alone = await output(name, "--help");
  const amongAll = await output("help", name);
  expect(alone).toEqual(amongAll);
  expect(alone.code).toBe(0);
});

test("a mistyped command is still told the command it resembles", async () => {
  const { code, text } = await output("locaitons", "list");
  expect(code).toBe(2);
  expect(text).toContain("(Did you mean locations?)");
});
