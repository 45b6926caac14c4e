import { expect, test } from "vitest";
import { smsParts } from "../../src/core/parts.ts";

test.each([
  { name: "empty", text: "", parts: 0, encoding: "GSM-7" },
  { name: "160 GSM characters: one part", text: "a".repeat(160), parts: 1, encoding: "GSM-7" },
  { name: "161 GSM characters: two parts of 153", text: "a".repeat(161), parts: 2, encoding: "GSM-7" },
  { name: "306 GSM characters: two parts", text: "a".repeat(306), parts: 2, encoding: "GSM-7" },
  { name: "307 GSM characters: three parts", text: "a".repeat(307), parts: 3, encoding: "GSM-7" },
  { name: "80 euro signs (two septets each) fill one part", text: "€".repeat(80), parts: 1, encoding: "GSM-7" },
  { name: "81 euro signs spill into a second part", text: "€".repeat(81), parts: 2, encoding: "GSM-7" },
  { name: "accents in GSM-7 (é, ñ, Ü) stay GSM-7", text: "Salamat po, Señor Müller é", parts: 1, encoding: "GSM-7" },
  { name: "70 characters with one emoji-free Unicode letter: one UCS-2 part", text: "ā" + "a".repeat(69), parts: 1, encoding: "UCS-2" },
  { name: "71 UCS-2 characters: two parts of 67", text: "ā" + "a".repeat(70), parts: 2, encoding: "UCS-2" },
  { name: "an emoji counts as two UTF-16 units", text: "😀".repeat(35), parts: 1, encoding: "UCS-2" },
  { name: "36 emoji: 72 units, two parts", text: "😀".repeat(36), parts: 2, encoding: "UCS-2" },
  { name: "10,000 GSM characters", text: "a".repeat(10_000), parts: 66, encoding: "GSM-7" },
])("$name", ({ text, parts, encoding }) => {
  expect(smsParts(text)).toEqual({ parts, encoding });
});
