import { describe, expect, it } from "vitest";
import { optOutWord } from "../../src/core/inbound/stop-words.ts";

describe("optOutWord", () => {
  it.each([
    ["STOP", "stop"],
    ["stop", "stop"],
    ["  Stop. ", "stop"],
    ["STOPALL", "stop"],
    ["unsubscribe!", "stop"],
    ["Cancel", "stop"],
    ["end", "stop"],
    ["QUIT", "stop"],
    ["hinto", "stop"],
    ["START", "start"],
    ["unstop", "start"],
    ["stop sending at 5", undefined],
    ["please stop", undefined],
    ["stopp", undefined],
    ["", undefined],
    ["ok", undefined],
  ] as const)("%j is %s", (text, want) => {
    expect(optOutWord(text)).toBe(want);
  });
});

describe("optOutWord: emoji around a stop word are punctuation, and STOP ALL is STOPALL", () => {
  it.each([
    ["STOP 🙏", "stop"],
    ["🛑 stop 🛑", "stop"],
    ["Stop ❤️", "stop"],
    ["STOP 👍🏽", "stop"],
    ["STOP ALL", "stop"],
    ["stop  all!", "stop"],
    ["ＳＴＯＰ", "stop"],
    ["start 😊", "start"],
    ["please stop calling me", undefined],
    ["stop all of them at 5", undefined],
    ["🙏", undefined],
  ] as const)("%j is %s", (text, want) => {
    expect(optOutWord(text)).toBe(want);
  });
});
