import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { filesUnder, withoutComments } from "../helpers/files.ts";

// One policy per decision: the clients (src/core/clients/) read the remote
// systems' HTTP answers and say what happened in typed errors; the rest of the core decides
// on those kinds alone (src/core/retry-policy.ts), never on an HTTP status.

/** The one place outside the clients that may carry a gateway's HTTP status: a held key's, shown by `bridge status`. */
const SHOWN_ONLY = { file: join("src", "core", "delivery", "holds.ts"), line: /^const status = error\.httpStatus \?\? 0;$/ };

/** The lines of `text` that read an HTTP status: `httpStatus`, or a status compared with (or listed among) three-digit numbers. */
function statusReads(text: string): string[] {
  return withoutComments(text)
    .split("\n")
    .filter(
      (line) =>
        /\bhttpStatus\b/.test(line) ||
        /\.status\s*(===|!==|==|!=|>=|<=|>|<)\s*\d{3}\b/.test(line) ||
        /\b\d{3}\s*(===|!==|==|!=|>=|<=|>|<)\s*[\w.?]*\.status\b/.test(line) ||
        /\[\s*\d{3}(\s*,\s*\d{3})*\s*\]\.includes\(/.test(line),
    )
    .map((line) => line.trim());
}

const CORE = filesUnder(join("src", "core")).filter((f) => f.endsWith(".ts") && !f.startsWith(join("src", "core", "clients")));

test.each([
  ["if (error instanceof GatewayError && error.httpStatus === 404) return x;", 1],
  ["passing ||= failure.status === undefined || failure.status >= 500 || failure.status === 429;", 1],
  ["if ([401, 402, 403].includes(error.httpStatus ?? 0)) {", 1],
  ["(error instanceof CrmError && [400, 403, 404].includes(code));", 1],
  ["if (401 === res.status) renew();", 1],
  ['if (status.status === "delivered") return x;', 0],
  ["// a 401 here: the key (res.status === 401)", 0],
  ['if (error instanceof GatewayError && error.failure === "not_found") return x;', 0],
])("the scan finds a status read in %j: %d", (line, found) => {
  expect(statusReads(line)).toHaveLength(found);
});

test("the scan reads the core outside its clients", () => {
  expect(CORE.length).toBeGreaterThan(30);
  expect(CORE).toContain(join("src", "core", "retry-policy.ts"));
  expect(CORE).not.toContain(join("src", "core", "clients", "cast.ts"));
});

test.each(CORE)("%s decides on the clients' kinds, never on an HTTP status", (file) => {
  const reads = statusReads(readFileSync(file, "utf8")).filter((line) => !(file === SHOWN_ONLY.file && SHOWN_ONLY.line.test(line)));
  expect(reads).toEqual([]);
});
