import type { H3, H3Event } from "h3";
import { SIGNATURE_HEADERS, type Intake } from "../core/delivery/intake.ts";
import { httpError } from "./http-error.ts";
import { createBodyBudget, parseJson, readLimitedBody, type BodyBudget } from "./body.ts";

export interface WebhookDeps {
  intake: Intake;
  /** What unsigned webhook bodies may hold in memory together (a fresh budget when not given). */
  bodyBudget?: BodyBudget;
}

/**
 * POST /webhooks/crm: the Delivery URL and the app's webhook URL (docs/http.md, "The webhook"). The
 * route reads the body within its limits and hands it to core's intake, which verifies
 * it, commits the job and answers: a 200 means the message is on disk. Anything
 * unsigned is refused before it is even parsed.
 */
export function webhookRoutes(app: H3, { intake, bodyBudget = createBodyBudget() }: WebhookDeps): void {
  // Webhooks being read or verified: each may join the next group commit.
  let arriving = 0;

  /**
   * The raw body, once a signature over it checks out; 401 when none does. Until then
   * anyone may have sent it, so its bytes count against the shared budget for
   * unsigned bodies, given back however the reading or checking ends.
   */
  async function readSigned(event: H3Event): Promise<Uint8Array> {
    const lease = bodyBudget.lease();
    try {
      const raw = await readLimitedBody(event, lease);
      const signatures = SIGNATURE_HEADERS.map((name) => event.req.headers.get(name));
      if (!(await intake.verify(raw, signatures))) throw httpError(401, "invalid webhook signature");
      return raw;
    } finally {
      lease.release();
    }
  }

  app.post("/webhooks/crm", async (event) => {
    arriving++;
    const raw = await readSigned(event).finally(() => arriving--);
    return intake.receive(parseJson(raw), arriving === 0);
  });
}
