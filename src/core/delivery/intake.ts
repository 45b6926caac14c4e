import type { KeyObject } from "node:crypto";
import { z } from "zod";
import type { Commit } from "../../db/commit.ts";
import type { JobStore, OutboundMessage } from "../../db/jobs.ts";
import { AppError, errorMessage } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import type { LaterInstaller } from "../installs/install-later.ts";
import type { Logger } from "../log.ts";
import { SIGNATURE_HEADERS, verifyWebhook } from "../signature.ts";
import type { CompanyUninstaller } from "../installs/uninstall-company.ts";
import type { Uninstaller } from "../installs/uninstall.ts";

export { SIGNATURE_HEADERS };

export interface IntakeDeps {
  jobs: Pick<JobStore, "enqueue">;
  commit: Commit;
  now: () => number;
  log: Logger;
  webhookKeys: KeyObject[];
  /** This app's id: only its INSTALL and UNINSTALL events count. */
  appId: string;
  installLocation: LaterInstaller;
  uninstall: Uninstaller;
  uninstallCompany: CompanyUninstaller;
  /** A new job was committed: wake the queue. */
  notify?: () => void;
}

/** What the webhook's sender is told: 200 with this status. Refusals are AppErrors (400, 429). */
export interface IntakeAnswer {
  status: "accepted" | "ok" | "ignored";
}

export type Intake = ReturnType<typeof createIntake>;

// A missing, empty or malformed id is refused alike: nothing that is not an id reaches a URL or a log.
const id = z.string().trim().regex(ID_PATTERN, ID_RULE);

/**
 * HighLevel's ProviderOutboundMessage, the fields bridge uses. Only a missing (or
 * unusable) id or phone is refused here (docs/http.md, "The webhook"); a bad number or a text too
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
const appEventSchema = z.object({ appId: z.unknown().optional(), locationId: id.optional(), companyId: id.optional() });

/**
 * What arrives at the webhook URL (docs/http.md, "The webhook"), once its bytes are read: verify,
 * then commit the job, then answer. An answer means the message is on disk; a
 * refusal to store it is a NOT_STORED error (429: HighLevel sends it again).
 */
export function createIntake(deps: IntakeDeps) {
  const { log } = deps;

  async function accept(message: OutboundMessage, alone: boolean): Promise<IntakeAnswer> {
    let fresh: boolean;
    try {
      // With no other webhook on its way, nothing would join the batch: commit now.
      fresh = await deps.commit(() => deps.jobs.enqueue(message, deps.now()), alone);
    } catch (error) {
      log.error(`could not store message ${message.messageId}: ${errorMessage(error)}`);
      throw notStored("could not store the message");
    }
    if (fresh) deps.notify?.();
    else log.info(`message ${message.messageId} already accepted; not queued again`);
    return { status: "accepted" };
  }

  /**
   * INSTALL of a location HighLevel added the app to after the agency's install. Only
   * our own appId counts, as for UNINSTALL. "retry" becomes NOT_STORED, which HighLevel
   * sends again, so an INSTALL that came too early is not lost.
   */
  async function install(body: unknown): Promise<IntakeAnswer> {
    const event = appEvent("INSTALL", body);
    if (!event) return { status: "ignored" };
    const { locationId, companyId } = event;
    if (!locationId) {
      // The agency-level install itself: its OAuth callback brings the company token.
      log.info(`INSTALL of company ${companyId ?? "(none)"} (agency-wide): its locations come with the agency's install`);
      return { status: "ok" };
    }
    const verdict = await deps.installLocation(locationId, companyId);
    if (verdict === "retry") throw notStored("the install could not be applied yet");
    return { status: verdict === "installed" || verdict === "already_installed" ? "ok" : "ignored" };
  }

  /** An app event's ids, or undefined when it is another app's (logged). Bad ids: 400. */
  function appEvent(type: string, body: unknown): { locationId?: string; companyId?: string } | undefined {
    const event = appEventSchema.safeParse(body);
    if (!event.success) throw badWebhook(`invalid ${type} event: locationId and companyId ${ID_RULE}`);
    const { appId, locationId, companyId } = event.data;
    if (typeof appId === "string" && appId.toLowerCase() === deps.appId.toLowerCase()) return { locationId, companyId };
    const what = locationId ? `location ${locationId}` : `company ${companyId ?? "(none)"}`;
    // Another app's INSTALL is routine (HighLevel sends every app's); another's UNINSTALL is worth a look.
    const note = `${type} of ${what} ignored: its appId ${JSON.stringify(appId)?.slice(0, 100) ?? "(none)"} is not this app's`;
    if (type === "INSTALL") log.info(note);
    else log.warn(note);
    return undefined;
  }

  /**
   * HighLevel signs every marketplace app's webhooks with the same key, so the signature
   * does not say the event is about this app: only our own appId counts. Even then the
   * event may be a replay: it is applied only once HighLevel confirms it.
   */
  async function uninstall(body: unknown): Promise<IntakeAnswer> {
    const event = appEvent("UNINSTALL", body);
    if (!event) return { status: "ignored" };
    const { locationId, companyId } = event;
    if (!locationId) return uninstallCompany(companyId);
    const what = `location ${locationId}`;
    const result = await confirmed(what, () => deps.uninstall(locationId));
    if (result.verdict === "recheck") throw recheck(what, result.recheckInMs);
    if (result.verdict === "still_installed") return stale(what);
    if (result.verdict === "not_installed") log.info(`UNINSTALL of ${what}: it was not installed`);
    return { status: "ok" };
  }

  /** An agency-level UNINSTALL: applied once HighLevel confirms it. */
  async function uninstallCompany(companyId: string | undefined): Promise<IntakeAnswer> {
    if (!companyId) {
      log.warn("UNINSTALL with neither locationId nor companyId ignored");
      return { status: "ignored" };
    }
    const what = `company ${companyId} (agency-wide)`;
    const result = await confirmed(what, () => deps.uninstallCompany(companyId));
    if (result.verdict === "recheck") throw recheck(what, result.recheckInMs);
    if (result.verdict === "still_installed") return stale(what);
    if (result.verdict === "not_installed") log.info(`UNINSTALL of ${what}: bridge holds neither its token nor a location of it`);
    return { status: "ok" };
  }

  /** HighLevel could not be asked: not applied, so not acknowledged. */
  async function confirmed<T>(what: string, apply: () => Promise<T>): Promise<T> {
    try {
      return await apply();
    } catch (error) {
      log.warn(`UNINSTALL of ${what} not applied yet: HighLevel could not confirm it (${errorMessage(error)}); it will be sent again`);
      throw notStored("could not apply the uninstall");
    }
  }

  /**
   * HighLevel accepted the token under a minute ago and is not asked again so soon (each
   * ask spends the refresh token), or its answer came to a refresh that began before this
   * event. This may be a real UNINSTALL right after a replayed one or that refresh, so it
   * is not acknowledged: HighLevel sends it again, when it may be asked.
   */
  function recheck(what: string, recheckInMs: number): AppError {
    const seconds = Math.ceil(recheckInMs / 1000);
    log.warn(`UNINSTALL of ${what} not applied yet: HighLevel accepted its token under a minute ago, or a refresh begun before this event was asking it; it is asked again when this is sent again (in ${seconds} s or later)`);
    return notStored("the uninstall cannot be confirmed yet", recheckInMs);
  }

  function stale(what: string): IntakeAnswer {
    log.warn(`UNINSTALL of ${what} ignored: HighLevel still accepts its token (a replayed or stale event)`);
    return { status: "ignored" };
  }

  return {
    /** Whether any configured key signed `raw` (one of the SIGNATURE_HEADERS' values); logged when none did. */
    async verify(raw: Uint8Array, signatures: (string | null)[]): Promise<boolean> {
      if (await verifyWebhook(raw, signatures, deps.webhookKeys)) return true;
      log.warn(`webhook refused: invalid or missing signature`);
      return false;
    },
    /**
     * A verified webhook's JSON body. `alone`: no other webhook is on its way, so its
     * job commits at once instead of waiting for others to share the commit.
     */
    async receive(body: unknown, alone: boolean): Promise<IntakeAnswer> {
      const kind = eventSchema.safeParse(body);
      if (!kind.success) throw badWebhook("webhook body must be a JSON object with a string 'type'");
      switch (kind.data.type) {
        case "SMS":
          return accept(readOutbound(body), alone);
        case "INSTALL":
          return install(body);
        case "UNINSTALL":
          return uninstall(body);
        default:
          log.debug(`webhook of type ${JSON.stringify(kind.data.type.slice(0, 100))} ignored`);
          return { status: "ignored" };
      }
    },
  };
}

function readOutbound(body: unknown): OutboundMessage {
  const parsed = outboundSchema.safeParse(body);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".")))].join(", ");
    throw badWebhook(`invalid outbound message: missing or invalid ${fields}`);
  }
  const { locationId, messageId, phone, message, contactId, attachments } = parsed.data;
  return { locationId, messageId, phone, message, contactId, attachments };
}

function badWebhook(message: string): AppError {
  return new AppError("BAD_WEBHOOK", message);
}

/** Not stored, so not acknowledged: HighLevel retries only a 429, and comes back after Retry-After. */
function notStored(what: string, retryAfterMs = 5000): AppError {
  return new AppError("NOT_STORED", `${what}; retry later`, { retryAfterMs });
}
