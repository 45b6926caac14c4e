import { HTTPError } from "h3";

/**
 * A 4xx with the contract's error body (`{"error": message}`, written by app.ts's error
 * handler). A leaf: every route module raises it without importing the app that wires them.
 */
export function httpError(status: number, message: string, headers?: Record<string, string>): HTTPError {
  return new HTTPError({ status, message, headers });
}
