import type { H3 } from "h3";
import { z } from "zod";
import type { Core } from "../core/index.ts";
import { ID_PATTERN, ID_RULE } from "../core/ids.ts";
import { PROVIDER_ID_MISSING } from "../core/inbound/sink.ts";
import { httpError } from "./http-error.ts";
import { createAdminAuth } from "./auth.ts";
import { parseJson, readLimitedBody } from "./body.ts";

export interface InboundDeps {
  core: Pick<Core, "config" | "log" | "now" | "inbound">;
}

/** A reply from any source but the phone (docs/http.md, "Replies"). */
const replyBody = z.object({
  from: z.string().min(1).max(40),
  text: z.string().min(1, "must not be empty").max(10_000),
  to: z.string().max(40).optional(),
  location_id: z.string().regex(ID_PATTERN, `must be a location id (${ID_RULE})`).optional(),
  received_at: z.string().max(64).optional(),
  id: z.string().min(1).max(200).optional(),
});

/**
 * POST /api/inbound, behind the INBOUND_API_KEY bearer: a reply is committed before the
 * 200, which carries bridge's id of it and whether an earlier copy (the same `id`) was
 * committed already. Without CRM_PROVIDER_ID every reply is refused (503), never dropped.
 */
export function inboundRoutes(app: H3, { core }: InboundDeps): void {
  const auth = createAdminAuth(core);
  app.post("/api/inbound", async (event) => {
    auth(event);
    if (!core.config.crm.providerId) throw httpError(503, PROVIDER_ID_MISSING);
    const parsed = replyBody.safeParse(parseJson(await readLimitedBody(event)));
    if (!parsed.success) throw httpError(400, `invalid reply: ${z.prettifyError(parsed.error).replace(/\n/g, "; ")}`);
    const { from, text, to, location_id, received_at, id } = parsed.data;
    const received = await core.inbound.sink.receive({ source: "api", from, text, to, locationId: location_id, receivedAt: received_at, sourceId: id });
    return { id: received.id, duplicate: received.duplicate };
  });
}
