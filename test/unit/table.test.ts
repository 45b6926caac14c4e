import { expect, test } from "vitest";
import { json, table } from "../../src/cli/io.ts";

// The CLI's tables (locations list, messages list, status, token refresh, sync) and its
// --json: a cell of outside text shows its control characters as escapes.

test("a table escapes each cell and aligns the columns on what is shown", () => {
  const shown = table(["KEY", "REASON"], [
    ["cast_abc...", "402: \x1b]0;pwned\x07\x1b[2J"],
    ["cast_d...", "line\nbreak"],
  ]);
  expect(shown).toBe(
    ["KEY          REASON", "cast_abc...  402: \\x1b]0;pwned\\x07\\x1b[2J", "cast_d...    line\\nbreak", ""].join("\n"),
  );
});

test("--json keeps the value and escapes what JSON.stringify leaves raw", () => {
  const text = json({ name: "\u009b2J\u202eOK" });
  expect(text).toBe('{\n  "name": "\\u009b2J\\u202eOK"\n}\n');
  expect(JSON.parse(text)).toEqual({ name: "\u009b2J\u202eOK" });
});
