import { getRouterParam, onResponse, type H3, type H3Event } from "h3";
import { setLocationConfig } from "../core/installs/location-config.ts";
import { senderIdCheck } from "../core/installs/sender-check.ts";
import { ID_RULE, isId } from "../core/ids.ts";
import { printableJson } from "../core/printable.ts";
import { getLocationConfig, listLocations, setApproval, withCap } from "../core/installs/locations.ts";
import { listLog, showLogEntry } from "../core/operator/message-log.ts";
import { messageNotFound, retryMessages } from "../core/operator/messages.ts";
import { addOptOut, listOptOuts, removeOptOut } from "../core/operator/optouts.ts";
import { bridgeStatus } from "../core/operator/status.ts";
import { usageReport } from "../core/operator/usage.ts";
import type { Core } from "../core/index.ts";
import { httpError } from "./http-error.ts";
import { createAdminAuth } from "./auth.ts";
import { parseJson, readLimitedBody } from "./body.ts";

/** What the admin API reads and changes: the store, the message log, the keys' record. */
export interface AdminDeps {
  core: Pick<Core, "config" | "log" | "now" | "tokens" | "messages" | "gatewayKeys" | "optOuts" | "replies" | "phones" | "outageRecords" | "alertStore" | "clients" | "usage" | "monthOf" | "delivery" | "servers" | "leases">;
}

/** The admin API (spec 4.1; docs/http.md, "The admin API"), all behind the INBOUND_API_KEY bearer. */
export function adminRoutes(app: H3, { core }: AdminDeps): void {
  const auth = createAdminAuth(core);
  // The answers carry outside text (location names, webhook phones, CRM and Cast error
  // bodies) that an operator reads with curl on a terminal: JSON.stringify leaves C1 and
  // bidi characters raw, so every answer here is written with them escaped, the same JSON.
  app.use("/api/admin/**", onResponse(printableAnswer));
  locationRoutes(app, core, auth);
  optOutRoutes(app, core, auth);
  messageRoutes(app, core, auth);
}

type Auth = ReturnType<typeof createAdminAuth>;

/** A location's settings and approval. */
function locationRoutes(app: H3, core: AdminDeps["core"], auth: Auth): void {
  app.get("/api/admin/locations", async (event) => {
    auth(event);
    return { locations: await listLocations(core.tokens, core.config.allowedCompanyIds, core.phones) };
  });

  app.get("/api/admin/locations/:locationId/config", async (event) => {
    auth(event);
    return await withCap(await getLocationConfig(core.tokens, locationParam(event), core.phones), core.usage);
  });

  app.put("/api/admin/locations/:locationId/config", async (event) => {
    auth(event);
    const body = parseJson(await readLimitedBody(event));
    const check = senderIdCheck(core.config, (key) => core.clients.cast.senderIds(key));
    return setLocationConfig(core.tokens, locationParam(event), body, core.now(), core.phones, check, core.usage);
  });

  for (const [action, approved] of [["approve", true], ["unapprove", false]] as const) {
    app.post(`/api/admin/locations/:locationId/${action}`, async (event) => {
      auth(event);
      return await setApproval(core.tokens, locationParam(event), approved, core.now(), core.config.allowedCompanyIds);
    });
  }
}

/** A location's opt-out list. */
function optOutRoutes(app: H3, core: AdminDeps["core"], auth: Auth): void {
  app.get("/api/admin/locations/:locationId/optouts", async (event) => {
    auth(event);
    return await listOptOuts(core, locationParam(event));
  });

  // The number goes in the JSON body ({"phone": …}), for DELETE too: in a path or a query
  // string a "+" is easily read as a space.
  app.post("/api/admin/locations/:locationId/optouts", async (event) => {
    auth(event);
    const locationId = locationParam(event);
    return addOptOut(core, locationId, phoneOf(parseJson(await readLimitedBody(event))), core.now());
  });

  app.delete("/api/admin/locations/:locationId/optouts", async (event) => {
    auth(event);
    const locationId = locationParam(event);
    return removeOptOut(core, locationId, phoneOf(parseJson(await readLimitedBody(event))));
  });
}

/** The queue's status and the message log. */
function messageRoutes(app: H3, core: AdminDeps["core"], auth: Auth): void {
  app.get("/api/admin/status", async (event) => {
    auth(event);
    return await bridgeStatus({ ...core, allowedCompanyIds: core.config.allowedCompanyIds, lowCredits: core.config.lowBalanceCredits, now: core.now() });
  });

  app.get("/api/admin/usage", async (event) => {
    auth(event);
    const q = event.url.searchParams;
    const query = { month: q.get("month") ?? undefined, location: q.get("location") ?? undefined };
    return usageReport(core.usage, query, core.monthOf, core.now());
  });

  app.get("/api/admin/messages", async (event) => {
    auth(event);
    const q = event.url.searchParams;
    const query = Object.fromEntries(["location", "status", "since", "limit", "cursor"].flatMap((k) => (q.has(k) ? [[k, q.get(k) ?? ""]] : [])));
    return await listLog(core.messages, core.replies, query, core.now());
  });

  app.get("/api/admin/messages/:messageId", async (event) => {
    auth(event);
    return await showLogEntry(core.messages, core.replies, idParam(event, "messageId", "message"));
  });

  app.post("/api/admin/messages/:messageId/retry", async (event) => {
    auth(event);
    const messageId = idParam(event, "messageId", "message");
    if (!(await core.messages.get(messageId))) throw messageNotFound(messageId);
    const refusal = (await retryMessages(core.messages, [messageId], core.now())).refused[0];
    if (refusal) throw httpError(409, `message ${messageId} may not be retried: ${refusal.reason}`);
    core.delivery.doorbell.ring(); // the worker takes it now
    return { message_id: messageId, queued: true };
  });
}

/** `phone` of a JSON object body; addOptOut and removeOptOut check it. */
function phoneOf(body: unknown): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw httpError(400, 'the body must be a JSON object: {"phone": "+639171234567"}');
  return (body as { phone?: unknown }).phone;
}

function locationParam(event: H3Event): string {
  return idParam(event, "locationId", "location");
}

function idParam(event: H3Event, param: string, what: string): string {
  const raw = getRouterParam(event, param) ?? "";
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw httpError(400, `malformed ${what} id in the path`);
  }
  if (!isId(id)) throw httpError(400, `invalid ${what} id: it ${ID_RULE}`);
  return id;
}

/** A JSON answer with the characters a terminal would obey escaped (printableJson); any other as it is. */
async function printableAnswer(response: Response): Promise<Response | undefined> {
  if (!response.headers.get("content-type")?.includes("json") || !response.body) return undefined;
  const json = printableJson(await response.text());
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(json, { status: response.status, statusText: response.statusText, headers });
}
