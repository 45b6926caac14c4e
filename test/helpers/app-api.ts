import { expect } from "vitest";
import { encryptUser, highLevelUser } from "./app-payload.ts";
import type { Bridge } from "./bridge.ts";

/** The settings page's API as a signed-in page calls it: `api(path, method, body)`. */
export type PageApi = (path: string, method?: string, body?: unknown) => Promise<Response>;

/** Signs in as HighLevel's user (loc-1's admin unless `fields` say otherwise) and returns a fetch with the session's bearer. */
export async function signInPage(bridge: Bridge, fields: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<PageApi> {
  const res = await bridge.fetch("/app/session", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ payload: encryptUser(highLevelUser(fields)) }),
  });
  expect(res.status).toBe(200);
  const { token } = (await res.json()) as { token: string };
  return (path, method = "GET", body) =>
    bridge.fetch(`/app/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
}
