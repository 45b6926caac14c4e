import { expect, test } from "vitest";
import { carrierCode, sqlCode, type FailureCode } from "../../src/db/failures.ts";

// The assertions that matter here are the typechecker's (`npm run typecheck` covers test/):
// a misspelt code, or the carrier's text not marked as such, is no FailureCode.
test("failure codes are a closed set", () => {
  const codes: FailureCode[] = ["invalid_phone", "gateway_unknown", "delivery_unknown", carrierCode("REJECTD")];
  // @ts-expect-error a misspelt code
  const misspelt: FailureCode = "invalid_phon";
  const fromCarrier: string = "UNDELIV";
  // @ts-expect-error a string from outside is marked with carrierCode first
  const unmarked: FailureCode = fromCarrier;
  expect([...codes, misspelt, unmarked]).toEqual(["invalid_phone", "gateway_unknown", "delivery_unknown", "REJECTD", "invalid_phon", "UNDELIV"]);
});

test("a code goes into SQL as a string literal", () => {
  expect(sqlCode("delivery_unknown")).toBe("'delivery_unknown'");
});
