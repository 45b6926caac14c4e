import { describe, expect, it } from "vitest";
import { createLogger, writesToJournal } from "../../src/core/log.ts";
import { captureStream } from "../helpers/stream.ts";

function capture() {
  const lines: string[] = [];
  return { lines, stream: captureStream(lines) };
}

describe("createLogger", () => {
  it("writes one line per entry: ISO time, level, message", () => {
    const { lines, stream } = capture();
    const log = createLogger("info", stream);
    log.info("listening on %s", "http://127.0.0.1:8080");
    log.warn("webhook refused");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[info\] listening on http:\/\/127\.0\.0\.1:8080\n$/);
    expect(lines[1]).toMatch(/Z \[warn\] webhook refused\n$/);
  });

  it("drops entries below the level, and logs nothing when silent", () => {
    const warnOnly = capture();
    createLogger("warn", warnOnly.stream).info("hidden");
    createLogger("warn", warnOnly.stream).error("shown");
    expect(warnOnly.lines.join("")).not.toContain("hidden");
    expect(warnOnly.lines.join("")).toContain("[error] shown");

    const silent = capture();
    createLogger("silent", silent.stream).error("nothing");
    expect(silent.lines).toEqual([]);
  });

  it("keeps an object on one line", () => {
    const { lines, stream } = capture();
    createLogger("debug", stream).debug("config", { port: 8080, gateway: { url: "http://x", key: "sk****" } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("[debug] config { port: 8080, gateway: { url: 'http://x', key: 'sk****' } }\n");
  });

  it("LOG_FORMAT=json: one JSON object per line with time, level, msg and the fields passed", () => {
    const { lines, stream } = capture();
    const log = createLogger("debug", stream, { format: "json" });
    log.info("listening on %s", "http://127.0.0.1:8080", { port: 8080, gateway: { url: "http://x" } });
    log.success("installed");
    log.error("boom", Object.assign(new Error("disk full\nsecond line"), { code: "ENOSPC" }));
    log.debug("config", { time: "not mine", level: "nor this", n: 1 });
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^\{.*\}\n$/);
    const [info, success, error, debug] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(info).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), level: "info", msg: "listening on http://127.0.0.1:8080", port: 8080, gateway: { url: "http://x" } });
    expect(success).toMatchObject({ level: "info", msg: "installed" });
    expect(error).toMatchObject({ level: "error", msg: "boom", error: { name: "Error", message: "disk full\nsecond line", code: "ENOSPC", stack: expect.stringContaining("disk full") } });
    expect(debug).toMatchObject({ level: "debug", msg: "config", n: 1 });
    expect(debug?.time).not.toBe("not mine");
  });

  it("a circular object still gives one JSON line", () => {
    const { lines, stream } = capture();
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    createLogger("info", stream, { format: "json" }).warn("odd", loop);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ level: "warn", msg: expect.stringContaining("odd") });
  });

  it("under journald each line starts with its syslog priority, stack lines too", () => {
    const { lines, stream } = capture();
    const log = createLogger("trace", stream, { journal: true });
    log.error(Object.assign(new Error("bad"), { stack: "Error: bad\n    at here" }));
    log.warn("careful");
    log.info("fine");
    log.success("done");
    log.debug("detail");
    expect(lines[0]).toMatch(/^<3>\d{4}-\d\d-\d\dT[\d:.]+Z \[error\] Error: bad\n<3>    at here\n$/);
    expect(lines.slice(1).map((l) => l.slice(0, 3))).toEqual(["<4>", "<6>", "<6>", "<7>"]);
    expect(lines[2]).toMatch(/^<6>\S+Z \[info\] fine\n$/);

    const json = capture();
    createLogger("info", json.stream, { format: "json", journal: true }).error("x");
    expect(json.lines[0]).toMatch(/^<3>\{"time":/);
  });

  it("a value's control characters show as escapes: no terminal sequence, no forged line", () => {
    const { lines, stream } = capture();
    const body = "bad sender\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07\n2026-11-25T00:00:00.000Z [error] forged";
    createLogger("info", stream).warn(`message m-1 failed: gateway rejected the message (400): ${body}`, "\x1b]0;pwned\x07");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\S+Z \[warn\] message m-1 failed: gateway rejected the message \(400\): bad sender\\x1b\]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\\x07\\n2026-11-25T00:00:00\.000Z \[error\] forged \\x1b\]0;pwned\\x07\n$/,
    );
  });

  it("an Error keeps its stack's lines; its message, which may quote a remote answer, stays on the first", () => {
    const { lines, stream } = capture();
    createLogger("info", stream).error("unhandled:", Object.assign(new Error("502: \x1b[2J\n2026-11-25T00:00:00.000Z [info] all fine"), { body: "\u202e\x1b" }));
    expect(lines).toHaveLength(1);
    const [first, ...rest] = (lines[0] ?? "").trimEnd().split("\n");
    expect(first).toMatch(/\[error\] unhandled: Error: 502: \\x1b\[2J\\n2026-11-25T00:00:00\.000Z \[info\] all fine$/);
    expect(rest.length).toBeGreaterThan(1);
    for (const line of rest) expect(line).toMatch(/^\s|^\}$/);
    expect(lines[0]).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
  });

  it("LOG_FORMAT=json: C1, DEL and bidi characters are \\u escapes too (JSON.stringify escapes C0)", () => {
    const { lines, stream } = capture();
    createLogger("info", stream, { format: "json" }).info("name \u009b2J\u202e\x7f", { name: "\x1b]0;x\x07\u2028" });
    expect(lines[0]).toBe(lines[0]?.replace(/[\u007f-\u009f\u2028\u202e]/g, ""));
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ msg: "name \u009b2J\u202e\x7f", name: "\x1b]0;x\x07\u2028" });
  });

  it.each([
    ["8:1234", { dev: 8, ino: 1234 }, true],
    ["8:1234", { dev: 8, ino: 999 }, false],
    [undefined, { dev: 8, ino: 1234 }, false],
    ["", { dev: 8, ino: 1234 }, false],
    ["8:1234", undefined, false],
  ])("writesToJournal(%j, %j) is %s", (variable, stat, expected) => {
    expect(writesToJournal(variable, stat)).toBe(expected);
  });
});
