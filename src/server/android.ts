import type { H3 } from "h3";
import { createPhoneWebhook, type PhoneWebhookDeps } from "../core/inbound/phone-webhook.ts";
import { createReceiptSettler, type ReceiptSettlerDeps } from "../core/delivery/receipt-settle.ts";
import { createBodyBudget, readLimitedBody, type BodyBudget } from "./body.ts";

/** The phone's webhook's deps, and what delivery settles its status events with. */
export type AndroidRouteDeps = Omit<PhoneWebhookDeps, "settleReceipt" | "jobs"> &
  ReceiptSettlerDeps & {
    jobs: PhoneWebhookDeps["jobs"] & ReceiptSettlerDeps["jobs"];
    /** What unsigned webhook bodies may hold in memory together (the CRM webhook's budget). */
    bodyBudget?: BodyBudget;
  };

/**
 * POST /webhooks/android: what a phone running SMS Gateway for Android posts (docs/android.md).
 * The body is read within the limits of any unsigned body, then checked and handled by core.
 */
export function androidRoutes(app: H3, { bodyBudget = createBodyBudget(), ...deps }: AndroidRouteDeps): void {
  const receive = createPhoneWebhook({ ...deps, settleReceipt: createReceiptSettler(deps) });
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
