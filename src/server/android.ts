import type { H3 } from "h3";
import type { PhoneWebhook } from "../core/core-types.ts";
import { createBodyBudget, readLimitedBody, type BodyBudget } from "./body.ts";

export interface AndroidRouteDeps {
  /** The inbound room's phone webhook (src/core/inbound/wire.ts). */
  receive: PhoneWebhook;
  /** What unsigned webhook bodies may hold in memory together (the CRM webhook's budget). */
  bodyBudget?: BodyBudget;
}

/**
 * POST /webhooks/android: what a phone running SMS Gateway for Android posts (docs/android.md).
 * The body is read within the limits of any unsigned body, then checked and handled by core.
 */
export function androidRoutes(app: H3, { receive, bodyBudget = createBodyBudget() }: AndroidRouteDeps): void {
  app.post("/webhooks/android", async (event) => {
    const lease = bodyBudget.lease();
    let raw: Uint8Array;
    try {
      raw = await readLimitedBody(event, lease);
    } finally {
      lease.release();
    }
    const headers = event.req.headers;
    const answer = await receive(raw, headers.get("x-signature"), headers.get("x-timestamp"));
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { "content-type": "application/json; charset=utf-8" } });
  });
}
