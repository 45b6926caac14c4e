import { expect } from "vitest";
import { fixture } from "./fixtures.ts";

/** What an answer is made of: field names, and each value's kind (an ISO time, an integer, …). */
export function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) {
    const shapes = value.map(shapeOf);
    for (const s of shapes) expect(s, "every element of a list has one shape").toEqual(shapes[0]);
    return shapes.slice(0, 1);
  }
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v)]));
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(value)) return "ISO time, to the second";
  return typeof value;
}

/**
 * A fake Cast's answers to a path Cast has no endpoint for (404 NOT_FOUND) and to a wrong
 * method (405 METHOD_NOT_ALLOWED), held to the error envelope of error-402.json. `call`
 * sends one request to the fake and gives back its status and parsed body.
 */
export async function expectCastRouteErrors(call: (path: string, init: RequestInit) => Promise<{ status: number; body: unknown }>): Promise<void> {
  const cases = [
    { method: "GET", path: "/api/v1/no/such/endpoint", status: 404, code: "NOT_FOUND" },
    { method: "POST", path: "/api/v1/sms/send/extra", status: 404, code: "NOT_FOUND" },
    { method: "GET", path: "/api/v1/sms/send", status: 405, code: "METHOD_NOT_ALLOWED" },
    { method: "POST", path: "/api/v1/account/balance", status: 405, code: "METHOD_NOT_ALLOWED" },
    { method: "DELETE", path: "/api/v1/sms/status/CASTabc123def456", status: 405, code: "METHOD_NOT_ALLOWED" },
  ];
  for (const { method, path, status, code } of cases) {
    const res = await call(path, { method });
    expect(res.status, `${method} ${path}`).toBe(status);
    expect(shapeOf(res.body)).toEqual(shapeOf(fixture("cast", "error-402.json")));
    expect(res.body).toMatchObject({ success: false, error_code: code });
  }
}
