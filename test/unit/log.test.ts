import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/core/log.ts";
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
});
