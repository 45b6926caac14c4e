import { describe, expect, test } from "vitest";
import { createLogger } from "../../src/core/log.ts";
import { createOutages, formatDuration } from "../../src/core/operator/outages.ts";
import { captureStream } from "../helpers/stream.ts";

test.each([
  [0, "0 s"],
  [499, "0 s"],
  [45_000, "45 s"],
  [60_000, "1 min 0 s"],
  [12 * 60_000 + 5_000, "12 min 5 s"],
  [3 * 3_600_000 + 20 * 60_000 + 59_000, "3 h 20 min"],
])("formatDuration(%d) is %s", (ms, text) => {
  expect(formatDuration(ms)).toBe(text);
});

describe("createOutages", () => {
  function setup() {
    const lines: string[] = [];
    let t = 1_000_000;
    const outages = createOutages({ log: createLogger("info", captureStream(lines)), now: () => t });
    return { lines, outages, advance: (ms: number) => (t += ms) };
  }
  const failed = { remote: "crm" as const, operation: "updateMessageStatus", ms: 5, ok: false, error: "timeout" as const, message: "no answer from h:443 within 30 s (timeout)" };
  const answered = { remote: "crm" as const, operation: "updateMessageStatus", ms: 5, ok: true, status: 200 };

  test("one line at the start, none per failed call, one at the end with the length", () => {
    const { lines, outages, advance } = setup();
    outages.observe(answered);
    outages.observe(failed);
    advance(30_000);
    outages.observe(failed);
    outages.observe({ ...failed, remote: "cast", operation: "send", error: "http", message: "send answered 502" });
    expect(outages.list()).toMatchObject([
      { remote: "crm", kind: "timeout", failedCalls: 2, since: 1_000_000 },
      { remote: "cast", kind: "http", failedCalls: 1 },
    ]);
    advance(95_000);
    outages.observe(answered);
    outages.observe(answered);
    expect(lines.map((line) => line.replace(/^\S+ /, ""))).toEqual([
      "[warn] HighLevel unreachable (timeout): no answer from h:443 within 30 s (timeout); status reports wait until it answers\n",
      "[error] Cast.ph unreachable (http): send answered 502; sends wait until it answers\n",
      "[info] HighLevel reachable again after 2 min 5 s (2 failed calls): status reports resume\n",
    ]);
    expect(outages.list()).toMatchObject([{ remote: "cast" }]);
  });

  test("a 4xx or a 429 is an answer: no outage", () => {
    const { lines, outages } = setup();
    outages.observe({ ...answered, status: 429 });
    outages.observe({ ...answered, status: 404 });
    expect([lines, outages.list()]).toEqual([[], []]);
  });
});
