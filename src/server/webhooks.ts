import type { H3, H3Event } from "h3";
import { z } from "zod";
import { errorMessage } from "../errors.ts";
import { ID_PATTERN, ID_RULE } from "../core/ids.ts";
import { SIGNATURE_HEADERS, verifyWebhook } from "../core/signature.ts";
import type { OutboundMessage } from "../db/jobs.ts";
import { httpError, type AppDeps } from "./app.ts";
import { createBodyBudget, parseJson, readLimitedBody } from "./body.ts";

// A missing, empty or malformed id is refused alike: nothing that is not an id reaches a URL or a log.
const id = z.string().trim().regex(ID_PATTERN, ID_RULE);

/**
 * HighLevel's ProviderOutboundMessage, the fields bridge uses. Only a missing (or
 * unusable) id or phone is refused here (CONTRACT.md 4); a bad number or a text too
 * long for the gateway is accepted and reported `failed`, so the CRM shows why.
 * The 256 KiB body limit bounds the rest.
 */
const outboundSchema = z.object({
  type: z.literal("SMS"),
  locationId: id,
  messageId: id,
  phone: z.string().trim().min(1),
  message: z.string().nullish().transform((text) => text ?? ""),
  contactId: z.union([id, z.literal("")]).nullish().transform((contact) => contact ?? ""),
  attachments: z.array(z.string()).nullish().transform((urls) => urls ?? []),
});

const eventSchema = z.object({ type: z.string() });

/**
 * POST /webhooks/crm: the Delivery URL and the app's webhook URL (CONTRACT.md 4).
 * Verify over the raw bytes, then commit the job, then acknowledge: a 200 means the
 * message is on disk. Anything unsigned is refused before it is even parsed.
 */
export function webhookRoutes(app: H3, { core, worker, bodyBudget = createBodyBudget() }: AppDeps): void {
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
      if (!(await verifyWebhook(raw, signatures, core.config.crm.webhookKeys))) {
        core.log.warn(`webhook refused: invalid or missing signature`);
        throw httpError(401, "invalid webhook signature");
      }
      return raw;
    } finally {
      lease.release();
    }
  }

  app.post("/webhooks/crm", async (event) => {
    arriving++;
    const raw = await readSigned(event).finally(() => arriving--);
    const body = parseJson(raw);
    const kind = eventSchema.safeParse(body);
    if (!kind.success) throw httpError(400, "webhook body must be a JSON object with a string 'type'");

    switch (kind.data.type) {
      case "SMS":
        return accept(readOutbound(body));
      case "INSTALL":
        return install(body);
      case "UNINSTALL":
        return uninstall(body);
      default:
        core.log.debug(`webhook of type ${JSON.stringify(kind.data.type.slice(0, 100))} ignored`);
        return { status: "ignored" };
    }
  });

  async function accept(message: OutboundMessage) {
    let fresh: boolean;
    try {
      // With no other webhook on its way, nothing would join the batch: commit now.
      fresh = await core.commit(() => core.jobs.enqueue(message, core.now()), arriving === 0);
    } catch (error) {
      core.log.error(`could not store message ${message.messageId}: ${errorMessage(error)}`);
      throw notStored("could not store the message");
    }
    if (fresh) worker?.notify();
    else core.log.info(`message ${message.messageId} already accepted; not queued again`);
    return { status: "accepted" };
  }

  /**
   * INSTALL of a location HighLevel added the app to after the agency's install. Only
   * our own appId counts, as for UNINSTALL. Core decides; "retry" becomes a 429, which
   * HighLevel sends again, so an INSTALL that came too early is not lost.
   */
  async function install(body: unknown) {
    const event = appEvent("INSTALL", body);
    if (!event) return { status: "ignored" };
    const { locationId, companyId } = event;
    if (!locationId) {
      // The agency-level install itself: its OAuth callback brings the company token.
      core.log.info(`INSTALL of company ${companyId ?? "(none)"} (agency-wide): its locations come with the agency's install`);
      return { status: "ok" };
    }
    const verdict = await core.installLocation(locationId, companyId);
    if (verdict === "retry") throw notStored("the install could not be applied yet");
    return { status: verdict === "installed" || verdict === "already_installed" ? "ok" : "ignored" };
  }

  /** An app event's ids, or undefined when it is another app's (logged). Bad ids: 400. */
  function appEvent(type: string, body: unknown): { locationId?: string; companyId?: string } | undefined {
    const event = z.object({ appId: z.unknown().optional(), locationId: id.optional(), companyId: id.optional() }).safeParse(body);
    if (!event.success) throw httpError(400, `invalid ${type} event: locationId and companyId ${ID_RULE}`);
    const { appId, locationId, companyId } = event.data;
    if (typeof appId === "string" && appId.toLowerCase() === core.config.crm.appId.toLowerCase()) return { locationId, companyId };
    const what = locationId ? `location ${locationId}` : `company ${companyId ?? "(none)"}`;
    // Another app's INSTALL is routine (HighLevel sends every app's); another's UNINSTALL is worth a look.
    const note = `${type} of ${what} ignored: its appId ${JSON.stringify(appId)?.slice(0, 100) ?? "(none)"} is not this app's`;
    if (type === "INSTALL") core.log.info(note);
    else core.log.warn(note);
    return undefined;
  }

  /**
   * HighLevel signs every marketplace app's webhooks with the same key, so the signature
   * does not say the event is about this app: only our own appId counts. Even then the
   * event may be a replay: core.uninstall applies it only once HighLevel confirms it.
   */
  async function uninstall(body: unknown) {
    const event = appEvent("UNINSTALL", body);
    if (!event) return { status: "ignored" };
    const { locationId, companyId } = event;
    const what = locationId ? `location ${locationId}` : `company ${companyId ?? "(none)"}`;
    if (!locationId) return uninstallCompany(companyId);
    let verdict;
    try {
      verdict = await core.uninstall(locationId);
    } catch (error) {
      core.log.warn(`UNINSTALL of ${what} not applied yet: HighLevel could not confirm it (${errorMessage(error)}); it will be sent again`);
      throw notStored("could not apply the uninstall");
    }
    if (verdict === "still_installed") {
      core.log.warn(`UNINSTALL of ${what} ignored: HighLevel still accepts its token (a replayed or stale event)`);
      return { status: "ignored" };
    }
    if (verdict === "not_installed") core.log.info(`UNINSTALL of ${what}: it was not installed`);
    return { status: "ok" };
  }

  /** An agency-level UNINSTALL: core applies it once HighLevel confirms it. */
  async function uninstallCompany(companyId: string | undefined) {
    if (!companyId) {
      core.log.warn("UNINSTALL with neither locationId nor companyId ignored");
      return { status: "ignored" };
    }
    const what = `company ${companyId} (agency-wide)`;
    let result;
    try {
      result = await core.uninstallCompany(companyId);
    } catch (error) {
      core.log.warn(`UNINSTALL of ${what} not applied yet: HighLevel could not confirm it (${errorMessage(error)}); it will be sent again`);
      throw notStored("could not apply the uninstall");
    }
    if (result.verdict === "still_installed") {
      core.log.warn(`UNINSTALL of ${what} ignored: HighLevel still accepts its token (a replayed or stale event)`);
      return { status: "ignored" };
    }
    if (result.verdict === "not_installed") core.log.info(`UNINSTALL of ${what}: bridge holds neither its token nor a location of it`);
    return { status: "ok" };
  }
}

/** Not stored, so not acknowledged: HighLevel retries only a 429. */
function notStored(what: string) {
  return httpError(429, `${what}; retry later`, { "retry-after": "5" });
}

function readOutbound(body: unknown): OutboundMessage {
  const parsed = outboundSchema.safeParse(body);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".")))].join(", ");
    throw httpError(400, `invalid outbound message: missing or invalid ${fields}`);
  }
  const { locationId, messageId, phone, message, contactId, attachments } = parsed.data;
  return { locationId, messageId, phone, message, contactId, attachments };
}
