import { expect } from "vitest";

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
